package gatewaybin

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
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

// TestProcessSetEnvAndMustExit restarts a shell that kills itself (SIGKILL) when a per-start
// variable is set: SetEnv reaches only the following starts, MustExit returns once the process
// ended by itself, and stops the test (after killing it) when the process outlives the timeout.
func TestProcessSetEnvAndMustExit(t *testing.T) {
	p := NewProcess(t, ProcessConfig{
		Binary: "/bin/sh", Dir: t.TempDir(), Env: []string{"WH_BASE=b"},
		Args: []string{"-c", `echo "base=$WH_BASE crash=$WH_CRASH"; [ -n "$WH_CRASH" ] && kill -9 $$; while :; do sleep 0.05; done`},
	})
	p.SetEnv("WH_CRASH=1")
	p.Start(t)
	if code := p.MustExit(t, 10*time.Second); code != -1 {
		t.Fatalf("exit code %d, want -1 (killed by a signal)", code)
	}
	p.SetEnv()
	p.Start(t)
	rec := &fatalRecorder{TB: t}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		p.MustExit(rec, 300*time.Millisecond)
		t.Error("MustExit returned for a process that did not exit")
	}()
	<-stopped
	if !strings.Contains(rec.fatal, "did not exit by itself") {
		t.Fatalf("MustExit on a running process: fatal %q, want \"did not exit by itself\"", rec.fatal)
	}
	if p.Running() {
		t.Fatal("MustExit left the process running")
	}
	out := p.Output()
	for _, want := range []string{"base=b crash=1\n", "base=b crash=\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output %q lacks %q", out, want)
		}
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and ends the calling
// goroutine, as FailNow does, without failing the real test.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestProcessListenAddrs drives a shell standing in for `wavehouse serve --listen-addr-file`:
// Start waits for the reported addresses, the URLs come from them (a wildcard host as
// loopback), a restart is handed the first start's addresses to re-bind, and a restart that
// finds its address taken is launched again.
func TestProcessListenAddrs(t *testing.T) {
	ops := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	defer ops.Close()
	opsAddr := strings.TrimPrefix(ops.URL, "http://")
	// sh -c SCRIPT --listen-addr-file PATH: $0 is the flag, $1 the path. The first start
	// "binds" [::]:7 and the ops test server; a pinned start reports what it was given, except
	// that its first attempt finds the address taken.
	script := `[ "$0" = --listen-addr-file ] || { echo "no flag: $0" >&2; exit 9; }
echo "pinned=$WH_SERVER_LISTEN,$WH_OPS_LISTEN"
if [ -n "$WH_OPS_LISTEN" ]; then
	if [ ! -e taken ]; then : > taken; echo "listen tcp $WH_SERVER_LISTEN: bind: address already in use" >&2; exit 1; fi
	printf '{"server":"%s","ops":"%s"}' "$WH_SERVER_LISTEN" "$WH_OPS_LISTEN" > "$1.tmp"
else
	printf '{"server":"[::]:7","ops":"%s"}' "` + opsAddr + `" > "$1.tmp"
fi
mv "$1.tmp" "$1"
trap 'exit 0' TERM; while :; do sleep 0.05; done`
	p := NewProcess(t, ProcessConfig{
		Name: "sh", Binary: "/bin/sh", Dir: t.TempDir(), ListenAddrs: true, StopTimeout: 10 * time.Second,
		Args: []string{"-c", script},
	})
	if p.APIURL() != "" || p.OpsURL() != "" {
		t.Fatalf("URLs before the first start: %q %q, want none", p.APIURL(), p.OpsURL())
	}
	p.Start(t)
	if got, want := p.APIURL(), "http://127.0.0.1:7"; got != want {
		t.Fatalf("APIURL() = %q, want %q (a wildcard host is reached on loopback)", got, want)
	}
	if p.OpsURL() != ops.URL {
		t.Fatalf("OpsURL() = %q, want %q", p.OpsURL(), ops.URL)
	}
	p.Stop(t)
	p.Start(t)
	if p.APIURL() != "http://127.0.0.1:7" || p.OpsURL() != ops.URL {
		t.Fatalf("URLs after the restart: %q %q", p.APIURL(), p.OpsURL())
	}
	out := p.Output()
	for _, want := range []string{"pinned=,\n", "pinned=[::]:7," + opsAddr + "\n", "=== sh start 3"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output %q lacks %q", out, want)
		}
	}
	if strings.Count(out, "address already in use") != 1 {
		t.Fatalf("output %q: want one start refused with its address taken, then a relaunch", out)
	}
}
