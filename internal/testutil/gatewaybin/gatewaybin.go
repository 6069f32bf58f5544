// Package gatewaybin gives the suites that drive the real wavehouse binary (tests/integration,
// tests/idempotency, tests/split, tests/tenants) one way to build it, to give its processes a
// clean environment, to run them (Process: start, wait for readiness, capture output, stop
// gracefully, kill), and to talk to them (Client sends a request and reads the whole Response;
// OperatorKey, Client.Ops and Client.OpsSQL reach the operator routes, which are never
// anonymous, with the key a gateway generated in its data_dir).
package gatewaybin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// EnvBinary names a prebuilt binary to use instead of building one.
const EnvBinary = "WH_TEST_WAVEHOUSE_BIN"

// ModuleRoot returns the directory of the repository's go.mod.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the wavehouse module")
	}
	return filepath.Dir(mod), nil
}

// FaultsTag is the build tag of the crash tests' binary: serve gains --fault-kill-after, which
// kills the process at a writer fault point (cmd/wavehouse/faults.go).
const FaultsTag = "wavehouse_faults"

// Build returns the binary named by WH_TEST_WAVEHOUSE_BIN, or builds ./cmd/wavehouse into a
// temporary directory; cleanup removes what Build created. It is meant for TestMain, so it
// reports errors instead of failing a test.
func Build() (path string, cleanup func(), err error) {
	if p := os.Getenv(EnvBinary); p != "" {
		return p, func() {}, nil
	}
	return build()
}

// BuildWithFaults builds ./cmd/wavehouse with the FaultsTag, always (a prebuilt binary may
// lack the tag); cleanup removes it.
func BuildWithFaults() (path string, cleanup func(), err error) {
	return build("-tags", FaultsTag)
}

func build(flags ...string) (path string, cleanup func(), err error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "wh-bin-")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "wavehouse")
	args := append(append([]string{"build"}, flags...), "-o", path, "./cmd/wavehouse")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("building the wavehouse binary: %w", err)
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

// Env is the environment for a wavehouse process: the test's own minus every WH_* variable,
// which would otherwise override the generated config (the binary reads none of the test
// tooling's WH_TEST_* ones).
func Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "WH_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
