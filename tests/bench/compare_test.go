// Package bench_test checks tests/bench/compare.sh, the script behind docs/benchmarks.md's
// side-by-side runs: two gateway builds alternated on one ClickHouse server, one summary line per
// phase and run with the gateway's peak RSS, and a non-zero exit when a run fails.
package bench_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// compare runs compare.sh with args against ch and returns its combined output and exit error.
func compare(t *testing.T, ch *testsvc.ClickHouse, args ...string) (string, error) {
	t.Helper()
	out, err := compareCmd(t, ch, t.TempDir(), args...).CombinedOutput()
	return string(out), err
}

// compareCmd is the command of compare.sh with args against ch, working under benchDir.
func compareCmd(t *testing.T, ch *testsvc.ClickHouse, benchDir string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "bash", append([]string{"compare.sh"}, args...)...)
	cmd.Env = append(os.Environ(),
		"WH_TEST_CLICKHOUSE_ADDR="+ch.NativeAddr,
		"WH_TEST_CLICKHOUSE_HTTP_ADDR="+ch.HTTPAddr,
		"WH_BENCH_DIR="+benchDir,
	)
	return cmd
}

// gatewayBinary builds the gateway of this checkout (or takes WH_TEST_WAVEHOUSE_BIN).
func gatewayBinary(t *testing.T) string {
	t.Helper()
	bin, cleanup, err := gatewaybin.Build()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return bin
}

func TestCompareAlternatesAndSummarises(t *testing.T) {
	ch := testsvc.ClickHouseServer(t)
	bin := gatewayBinary(t)
	table := testsvc.UniqueName(t, "cmp")
	out, err := compare(t, ch, "-n", "1", bin, bin, "--",
		"--create", "--table", table, "--clients", "4", "--rows", "10", "--duration", "1s", "--settle", "60s",
		"--idempotency-keys")
	if err != nil {
		t.Fatalf("compare.sh: %v\n%s", err, out)
	}
	_, summary, ok := strings.Cut(out, "== summary")
	if !ok {
		t.Fatalf("no summary in the output:\n%s", out)
	}
	// Runs alternate old, new; each has its unkeyed and keyed phase, with a positive rate and
	// the gateway's RSS peak and its CPU per request.
	line := regexp.MustCompile(`(?m)^(old|new)-1 +(gateway(?: keyed)?) +ok req/s +([0-9]+) .* RSS peak +([0-9]+) MB +CPU µs/req +([0-9]+)$`)
	got := line.FindAllStringSubmatch(summary, -1)
	want := [][2]string{{"old", "gateway"}, {"old", "gateway keyed"}, {"new", "gateway"}, {"new", "gateway keyed"}}
	if len(got) != len(want) {
		t.Fatalf("summary has %d phase lines, want %d:\n%s", len(got), len(want), summary)
	}
	for i, m := range got {
		if m[1] != want[i][0] || m[2] != want[i][1] {
			t.Errorf("summary line %d is %s %s, want %s %s", i, m[1], m[2], want[i][0], want[i][1])
		}
		if m[3] == "0" || m[4] == "0" || m[5] == "0" {
			t.Errorf("summary line %d: ok req/s %s, RSS peak %s MB, CPU %s µs a request; want all above 0", i, m[3], m[4], m[5])
		}
	}
	if n := strings.Count(out, "exit status 0, RSS peak"); n != 2 {
		t.Errorf("%d runs reported exit status 0, want 2:\n%s", n, out)
	}
}

func TestCompareFailsWhenAGatewayDoesNotStart(t *testing.T) {
	ch := testsvc.ClickHouseServer(t)
	bin := gatewayBinary(t)
	broken := filepath.Join(t.TempDir(), "broken")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho refusing to start >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := compare(t, ch, "-n", "1", broken, bin, "--",
		"--create", "--table", testsvc.UniqueName(t, "cmp"), "--clients", "2", "--rows", "1", "--duration", "1s")
	var exit *exec.ExitError
	if err == nil || !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("compare.sh with a gateway that exits: %v, want exit status 1\n%s", err, out)
	}
	if !strings.Contains(out, "old-1: the gateway did not become ready") || !strings.Contains(out, "refusing to start") {
		t.Errorf("the output does not name the run and show the gateway's log:\n%s", out)
	}
	if !strings.Contains(out, "== new-1:") {
		t.Errorf("the new side did not run after the old one failed:\n%s", out)
	}
}

// TestCompareStopsItsGatewayWhenInterrupted: an interrupted compare.sh (Ctrl-C, SIGTERM) stops
// the gateway and the load of the run in progress, removes its data directory and exits 130,
// instead of leaving a gateway running.
func TestCompareStopsItsGatewayWhenInterrupted(t *testing.T) {
	ch := testsvc.ClickHouseServer(t)
	bin := gatewayBinary(t)
	benchDir := t.TempDir()
	cmd := compareCmd(t, ch, benchDir, "-n", "1", bin, bin, "--",
		"--create", "--table", testsvc.UniqueName(t, "cmp"), "--clients", "2", "--rows", "1", "--duration", "10m")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var gateway, load int
	poll.Until(t, 3*time.Minute, "the first run's gateway and load", func() bool {
		gateway, load = processWith(t, benchDir, " serve "), processWith(t, benchDir, " bench ingest ")
		return gateway != 0 && load != 0
	})
	t.Cleanup(func() { // what a failed run of this test would leave
		for _, what := range []string{" serve ", " bench ingest "} {
			if pid := processWith(t, benchDir, what); pid != 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-waited
		t.Fatalf("compare.sh did not exit within a minute of the interrupt: it waits for the run in progress\n%s", out.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("interrupted compare.sh: %v, want exit status 130\n%s", err, out.String())
	}
	for name, pid := range map[string]int{"gateway": gateway, "load": load} {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("the %s (pid %d) is still there after compare.sh exited: %v", name, pid, err)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if runs, _ := filepath.Glob(filepath.Join(benchDir, "run.*")); len(runs) != 0 {
		t.Errorf("the run's directory is left: %v", runs)
	}
}

// processWith returns the pid of a process whose command line holds dir and what, or 0.
func processWith(t *testing.T, dir, what string) int {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the process ended
		}
		line := " " + strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(line, dir) && strings.Contains(line, what) {
			pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			if err == nil {
				return pid
			}
		}
	}
	return 0
}
