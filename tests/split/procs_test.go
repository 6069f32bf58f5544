package split

import (
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/splitdeploy"
)

// Roles of the processes the tests start.
const (
	roleAPI     = splitdeploy.RoleAPI
	roleIngest  = splitdeploy.RoleIngest
	roleSweeper = splitdeploy.RoleSweeper
)

// backends are the shared servers every process of one test uses, isolated from other tests by
// unique names (splitdeploy.Backends), with the suite's readers of ClickHouse.
type backends struct{ *splitdeploy.Backends }

// sharedBackends starts (or reuses, from the WH_TEST_* variables) ClickHouse, Redis and dynalite
// with a unique database, key prefix and table; natsURLs and replicas describe the queue.
func sharedBackends(t *testing.T, natsURLs []string, replicas int) *backends {
	t.Helper()
	return &backends{splitdeploy.New(t, splitdeploy.SharedServers(t), natsURLs, replicas)}
}

// proc is one wavehouse process with one role, restartable on the same data dir and ports.
type proc struct{ *splitdeploy.Proc }

// startProc writes the config of one process of the split topology and starts it.
func startProc(t *testing.T, b *backends, name, role string) *proc {
	t.Helper()
	return &proc{splitdeploy.Start(t, binaryPath, b.Backends, name, role)}
}

// start launches the process again and waits until /readyz answers 200.
func (p *proc) start(t *testing.T) {
	t.Helper()
	p.Process.Start(t)
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	p.Process.Kill(t)
}
