// Package integration runs the real wavehouse binary against real backends: the ingest pipeline
// end to end (HTTP → validation → durable queue → batched inserts → ClickHouse), its dead-letter
// queue, a ClickHouse outage and SIGKILL of the gateway under load.
package integration

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

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "wh-integration-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if p := os.Getenv("WH_TEST_WAVEHOUSE_BIN"); p != "" {
		binaryPath = p
	} else {
		binaryPath = filepath.Join(dir, "wavehouse")
		root, err := moduleRoot()
		if err != nil {
			fmt.Fprintln(os.Stderr, "integration:", err)
			return 1
		}
		cmd := exec.Command("go", "build", "-o", binaryPath, "./cmd/wavehouse")
		cmd.Dir = root
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "integration: building the wavehouse binary:", err)
			return 1
		}
	}
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
