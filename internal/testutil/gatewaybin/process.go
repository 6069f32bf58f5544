package gatewaybin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Default bounds of a Process's waits; the box running the suites is small and shared, and chDB
// loads a large library at boot.
const (
	DefaultReadyTimeout = 90 * time.Second
	DefaultStopTimeout  = 40 * time.Second
)

// ProcessConfig describes one wavehouse process a test runs.
type ProcessConfig struct {
	// Name names the process in failure messages and in the log's start markers (default
	// "wavehouse").
	Name string
	// Binary is the wavehouse binary, usually from Build; required.
	Binary string
	// Args are the command-line arguments, e.g. serve --config PATH.
	Args []string
	// Env are KEY=VALUE variables added to Env().
	Env []string
	// Dir is the working directory; required.
	Dir string
	// LogPath is the file that receives stdout and stderr of every start, appended (default
	// Dir/wavehouse.log). A suite that inspects all output of its processes points it elsewhere.
	LogPath string
	// Ops is the base URL of the ops listener (http://host:port). Start waits until its /readyz
	// answers 200; empty means Start only launches the process.
	Ops string
	// ReadyTimeout bounds the wait for /readyz (default DefaultReadyTimeout).
	ReadyTimeout time.Duration
	// StopTimeout bounds a graceful stop before the process is killed (default
	// DefaultStopTimeout).
	StopTimeout time.Duration
}

// Process is one wavehouse process, restartable with the same arguments, data and ports. Its
// output goes to a log file; the process is stopped (SIGTERM) when the test ends, and the tail of
// its log is logged when the test failed.
type Process struct {
	cfg    ProcessConfig
	client *http.Client

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	exitCode int // of the last run, valid once done is closed
	starts   int
	env      []string // added to the environment of the following starts (SetEnv)
}

// NewProcess returns a Process for cfg without starting it; the process is stopped in t.Cleanup.
func NewProcess(t testing.TB, cfg ProcessConfig) *Process {
	t.Helper()
	if cfg.Binary == "" || cfg.Dir == "" {
		t.Fatal("gatewaybin: ProcessConfig needs Binary and Dir")
	}
	if cfg.Name == "" {
		cfg.Name = "wavehouse"
	}
	if cfg.LogPath == "" {
		cfg.LogPath = filepath.Join(cfg.Dir, "wavehouse.log")
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	p := &Process{cfg: cfg, client: &http.Client{Timeout: 5 * time.Second}}
	t.Cleanup(func() {
		p.Stop(t)
		p.client.CloseIdleConnections()
		if t.Failed() {
			t.Logf("%s log tail (%s):\n%s", p.cfg.Name, p.cfg.LogPath, p.Tail(6000))
		}
	})
	return p
}

// StartProcess is NewProcess followed by Start.
func StartProcess(t testing.TB, cfg ProcessConfig) *Process {
	t.Helper()
	p := NewProcess(t, cfg)
	p.Start(t)
	return p
}

// Name returns the process's name.
func (p *Process) Name() string { return p.cfg.Name }

// LogPath returns the file holding the process's output.
func (p *Process) LogPath() string { return p.cfg.LogPath }

// SetEnv sets KEY=VALUE variables added, after ProcessConfig.Env, to the environment of the
// following starts (a test hook for one run, say); with no arguments it clears them.
func (p *Process) SetEnv(kv ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.env = append([]string(nil), kv...)
}

// Start launches the process and, when ProcessConfig.Ops is set, waits until it is ready.
func (p *Process) Start(t testing.TB) {
	t.Helper()
	p.Launch(t)
	if p.cfg.Ops != "" {
		p.WaitReady(t)
	}
}

// Launch starts the process without waiting for it to be ready.
func (p *Process) Launch(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		t.Fatalf("%s is already running", p.cfg.Name)
	}
	logf, err := os.OpenFile(p.cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	p.starts++
	fmt.Fprintf(logf, "=== %s start %d\n", p.cfg.Name, p.starts)
	cmd := exec.Command(p.cfg.Binary, p.cfg.Args...)
	cmd.Dir = p.cfg.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(append(Env(), p.cfg.Env...), p.env...)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting %s: %v", p.cfg.Name, err)
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		code := 0
		if err != nil {
			code = -1
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
		}
		logf.Close()
		p.mu.Lock()
		p.exitCode = code
		p.mu.Unlock()
		close(done)
	}()
	p.cmd, p.done = cmd, done
}

// WaitReady polls the ops listener's /readyz until it answers 200, failing the test when the
// process exits first or ReadyTimeout passes.
func (p *Process) WaitReady(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		t.Fatalf("%s is not running", p.cfg.Name)
	}
	if p.cfg.Ops == "" {
		t.Fatalf("%s: no ops listener to wait on", p.cfg.Name)
	}
	defer p.client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.ReadyTimeout)
	defer cancel()
	for {
		select {
		case <-done:
			t.Fatalf("%s exited before it was ready:\n%s", p.cfg.Name, p.Tail(4000))
		case <-ctx.Done():
			t.Fatalf("%s not ready after %s:\n%s", p.cfg.Name, p.cfg.ReadyTimeout, p.Tail(4000))
		case <-time.After(50 * time.Millisecond):
		}
		if p.ready(ctx) {
			return
		}
	}
}

func (p *Process) ready(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.cfg.Ops+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Running reports whether the process was started and has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Signal sends sig to the running process without waiting (SIGHUP, for example).
func (p *Process) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		t.Fatalf("%s is not running", p.cfg.Name)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to %s: %v", sig, p.cfg.Name, err)
	}
}

// Stop shuts the process down gracefully (SIGTERM), killing it if it outlives StopTimeout. It
// returns the exit code, or 0 when the process was not running.
func (p *Process) Stop(t testing.TB) int {
	t.Helper()
	return p.end(t, syscall.SIGTERM, p.cfg.StopTimeout)
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Process) Kill(t testing.TB) {
	t.Helper()
	p.end(t, syscall.SIGKILL, 30*time.Second)
}

// Wait waits up to timeout for the process to exit by itself and returns its exit code; a
// process still running then is killed and the test fails.
func (p *Process) Wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	return p.await(t, timeout, t.Errorf)
}

// MustExit is Wait for a process the test made end itself (a crash hook, say) and cannot go on
// without: a process still running after timeout is killed and the test stops (FailNow).
func (p *Process) MustExit(t testing.TB, timeout time.Duration) int {
	t.Helper()
	return p.await(t, timeout, t.Fatalf)
}

// await waits up to timeout for the process to exit by itself and returns its exit code; a
// process still running then is killed and reported with fail.
func (p *Process) await(t testing.TB, timeout time.Duration, fail func(format string, args ...any)) int {
	t.Helper()
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		t.Fatalf("%s was not started", p.cfg.Name)
	}
	select {
	case <-done:
		return p.detach()
	case <-time.After(timeout):
		code := p.end(t, syscall.SIGKILL, 30*time.Second)
		fail("%s did not exit by itself within %s; killed it", p.cfg.Name, timeout)
		return code
	}
}

// end signals the process and waits for it, killing it after timeout.
func (p *Process) end(t testing.TB, sig syscall.Signal, timeout time.Duration) int {
	t.Helper()
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return 0
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(timeout):
		t.Errorf("%s did not exit %s after %v; killing it", p.cfg.Name, timeout, sig)
		_ = cmd.Process.Kill()
		<-done
	}
	return p.detach()
}

// detach forgets the exited process so that Start may run it again, returning its exit code.
func (p *Process) detach() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cmd, p.done = nil, nil
	return p.exitCode
}

// Output returns everything the process (all its starts) wrote so far.
func (p *Process) Output() string {
	b, err := os.ReadFile(p.cfg.LogPath)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Tail returns the last n bytes of the process's output.
func (p *Process) Tail(n int) string {
	out := p.Output()
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Run runs the binary to completion with args and extra KEY=VALUE environment variables (added
// to Env()) in a fresh temporary directory, returning its exit code and combined output. It is
// for the short subcommands (config check, keys create).
func Run(t testing.TB, binary string, env []string, args ...string) (code int, output string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(Env(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		}
		t.Fatalf("running %s %q: %v", binary, args, err)
	}
	return 0, string(out)
}
