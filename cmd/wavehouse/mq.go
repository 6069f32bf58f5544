package main

import (
	"context"
	"io"

	"github.com/wavehouse/wavehouse/internal/mq/mqcli"
)

// runMQ runs `wavehouse mq …` (manifests, verify); args are the arguments
// after "mq". Exit codes: 0 ok, 1 failure or differences, 2 usage.
func runMQ(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return mqcli.Run(ctx, args, stdout, stderr)
}
