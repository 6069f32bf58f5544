// Package idempotency runs the real wavehouse binary to prove idempotent ingest end to end:
// requests retried with the same Idempotency-Key are enqueued once and answered with the
// recorded response, on both dedupe backends, across SIGKILL of the gateway and with the
// dedupe store down.
package idempotency

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binaryPath is the wavehouse binary built once by TestMain for every test of the package
// (WH_TEST_WAVEHOUSE_BIN names a prebuilt one instead).
var binaryPath string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if p := os.Getenv("WH_TEST_WAVEHOUSE_BIN"); p != "" {
		binaryPath = p
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "wh-idempotency-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "idempotency:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binaryPath = filepath.Join(dir, "wavehouse")
	out, err := exec.Command("go", "env", "GOMOD").Output()
	mod := strings.TrimSpace(string(out))
	if err != nil || mod == "" || mod == os.DevNull {
		fmt.Fprintln(os.Stderr, "idempotency: not inside the wavehouse module:", err)
		return 1
	}
	cmd := exec.Command("go", "build", "-o", binaryPath, "./cmd/wavehouse")
	cmd.Dir = filepath.Dir(mod)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "idempotency: building the wavehouse binary:", err)
		return 1
	}
	return m.Run()
}
