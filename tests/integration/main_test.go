// Package integration runs the real wavehouse binary against real backends: the ingest pipeline
// end to end (HTTP → validation → durable queue → batched inserts → ClickHouse), its dead-letter
// queue, a ClickHouse outage and SIGKILL of the gateway under load.
package integration

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// binaryPath is the wavehouse binary built once by TestMain for every test of the package.
var binaryPath string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	path, cleanup, err := gatewaybin.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	defer cleanup()
	binaryPath = path
	code := m.Run()
	if code == 0 {
		// Every gateway, server and client a test started must be gone with it.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "integration: leaked goroutines:", err)
			return 1
		}
	}
	return code
}
