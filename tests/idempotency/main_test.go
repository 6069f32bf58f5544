// Package idempotency runs the real wavehouse binary to prove idempotent ingest end to end:
// requests retried with the same Idempotency-Key are enqueued once and answered with the
// recorded response, on both dedupe backends, across SIGKILL of the gateway and with the
// dedupe store down.
package idempotency

import (
	"fmt"
	"os"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// binaryPath is the wavehouse binary built once by TestMain for every test of the package
// (WH_TEST_WAVEHOUSE_BIN names a prebuilt one instead).
var binaryPath string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	path, cleanup, err := gatewaybin.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, "idempotency:", err)
		return 1
	}
	defer cleanup()
	binaryPath = path
	return m.Run()
}
