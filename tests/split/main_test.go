// Package split proves the multi-process deployment: the committed compose and Kubernetes
// manifests are checked statically against the binary, the binary refuses every forbidden
// topology, and real api, ingest and sweeper processes share NATS JetStream, Redis, dynalite and
// a ClickHouse server while some of them (and a NATS node) are killed mid-load.
package split

import (
	"os"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// binaryPath is the wavehouse binary built once by TestMain for every test of the package.
var binaryPath string

// repoRoot is the directory of the repository's go.mod.
var repoRoot string

func TestMain(m *testing.M) {
	os.Exit(gatewaybin.Main(m, gatewaybin.Suite{Name: "split", LeakCheck: true, Before: func() (func(), error) {
		root, err := gatewaybin.ModuleRoot()
		repoRoot = root
		return nil, err
	}}, &binaryPath))
}

// runBinary runs the wavehouse binary with args and extra environment variables (KEY=VALUE),
// returning its exit code and combined output. WH_* variables of the test's own environment
// are dropped so that they cannot override the config under test.
func runBinary(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	return gatewaybin.Run(t, binaryPath, env, args...)
}
