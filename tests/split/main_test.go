// Package split proves the multi-process deployment: the committed compose and Kubernetes
// manifests are checked statically against the binary, the binary refuses every forbidden
// topology, and real api, ingest and sweeper processes share NATS JetStream, Redis, dynalite and
// a ClickHouse server while some of them (and a NATS node) are killed mid-load.
package split

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// binaryPath is the wavehouse binary built once by TestMain for every test of the package.
var binaryPath string

// repoRoot is the directory of the repository's go.mod.
var repoRoot string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "split:", err)
		return 1
	}
	repoRoot = root
	dir, err := os.MkdirTemp("", "wh-split-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "split:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if p := os.Getenv("WH_TEST_WAVEHOUSE_BIN"); p != "" {
		binaryPath = p
	} else {
		binaryPath = filepath.Join(dir, "wavehouse")
		cmd := exec.Command("go", "build", "-o", binaryPath, "./cmd/wavehouse")
		cmd.Dir = root
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "split: building the wavehouse binary:", err)
			return 1
		}
	}
	code := m.Run()
	if code == 0 {
		// The load clients, lease monitors and process waiters must all have ended.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "split: leaked goroutines:", err)
			return 1
		}
	}
	return code
}

// moduleRoot returns the directory of the repository's go.mod.
func moduleRoot() (string, error) {
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

// runBinary runs the wavehouse binary with args and extra environment variables (KEY=VALUE),
// returning its exit code and combined output. WH_* variables of the test's own environment
// are dropped so that they cannot override the config under test.
func runBinary(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binaryPath, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(processEnv(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		t.Fatalf("running %s %q: %v", binaryPath, args, err)
	}
	return 0, string(out)
}

// processEnv is the environment of a wavehouse process: the test's own, minus WH_* variables
// other than the test tooling's, which would otherwise override the generated config.
func processEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "WH_") && !strings.HasPrefix(kv, "WH_TEST_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
