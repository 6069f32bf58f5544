package gatewaybin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestProcessLifecycle drives a shell standing in for the binary: output is captured across
// restarts, readiness waits for /readyz, Stop is graceful and Kill is not, exit codes are kept.
func TestProcessLifecycle(t *testing.T) {
	var ready atomic.Bool
	ops := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer ops.Close()
	dir := t.TempDir()
	p := NewProcess(t, ProcessConfig{
		Name: "sh", Binary: "/bin/sh", Dir: dir, Ops: ops.URL, StopTimeout: 10 * time.Second,
		Args: []string{"-c", `echo "up $WH_PROBE"; trap 'echo bye; exit 7' TERM; while :; do sleep 0.05; done`},
		Env:  []string{"WH_PROBE=yes"},
	})
	time.AfterFunc(300*time.Millisecond, func() { ready.Store(true) })
	p.Start(t)
	if !ready.Load() {
		t.Fatal("Start returned before /readyz answered 200")
	}
	if !p.Running() {
		t.Fatal("not running after Start")
	}
	if code := p.Stop(t); code != 7 {
		t.Fatalf("graceful stop exit code %d, want 7 from the TERM trap", code)
	}
	if p.Running() {
		t.Fatal("running after Stop")
	}
	p.Start(t)
	p.Kill(t)
	out := p.Output()
	for _, want := range []string{"=== sh start 1", "up yes", "bye", "=== sh start 2"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output %q lacks %q", out, want)
		}
	}
	if strings.Count(out, "bye") != 1 {
		t.Fatalf("output %q: SIGKILL must not run the TERM trap", out)
	}
}

// TestProcessWaitAndRun checks exit codes of processes that end by themselves.
func TestProcessWaitAndRun(t *testing.T) {
	p := NewProcess(t, ProcessConfig{Binary: "/bin/sh", Dir: t.TempDir(), Args: []string{"-c", "echo refused >&2; exit 3"}})
	p.Start(t) // no Ops: launch only
	if code := p.Wait(t, 10*time.Second); code != 3 {
		t.Fatalf("exit code %d, want 3", code)
	}
	if !strings.Contains(p.Output(), "refused") {
		t.Fatalf("stderr not captured: %q", p.Output())
	}
	code, out := Run(t, "/bin/sh", []string{"WH_X=1"}, "-c", `echo "x=$WH_X"; exit 2`)
	if code != 2 || strings.TrimSpace(out) != "x=1" {
		t.Fatalf("Run = %d %q, want 2 \"x=1\"", code, out)
	}
}
