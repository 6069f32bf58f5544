// Package idempotency runs the real wavehouse binary to prove idempotent ingest end to end:
// requests retried with the same Idempotency-Key are enqueued once and answered with the
// recorded response, on both dedupe backends, across SIGKILL of the gateway and with the
// dedupe store down.
package idempotency

import (
	"os"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// binaryPath is the wavehouse binary built once by TestMain for every test of the package, with
// the fault flag the SIGKILL test kills the gateway through (gatewaybin.BuildWithFaults).
var binaryPath string

func TestMain(m *testing.M) {
	os.Exit(gatewaybin.Main(m, gatewaybin.Suite{Name: "idempotency", Faults: true}, &binaryPath))
}
