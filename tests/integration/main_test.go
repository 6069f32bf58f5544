// Package integration runs the real wavehouse binary against real backends: the ingest pipeline
// end to end (HTTP → validation → durable queue → batched inserts → ClickHouse), its dead-letter
// queue, a ClickHouse outage and SIGKILL of the gateway under load.
package integration

import (
	"os"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// binaryPath is the wavehouse binary built once by TestMain for every test of the package.
var binaryPath string

func TestMain(m *testing.M) {
	os.Exit(gatewaybin.Main(m, gatewaybin.Suite{Name: "integration", LeakCheck: true}, &binaryPath))
}
