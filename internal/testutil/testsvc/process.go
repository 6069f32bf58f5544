package testsvc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// readyTimeout bounds how long a server may take to become ready. It is
	// generous because the test machines are small and shared.
	readyTimeout = 90 * time.Second
	// pollInterval is the pause between two readiness probes.
	pollInterval = 50 * time.Millisecond
	// stopTimeout is how long a graceful stop waits before SIGKILL.
	stopTimeout = 10 * time.Second
	// startAttempts is how many times a first start is tried on new ports
	// when the server dies before it is ready (usually a port taken by
	// another process between choosing it and binding it).
	startAttempts = 3
	// logTail is how much of a log file is printed when a start fails.
	logTail = 4096
)

// readyFunc probes a server once and returns nil when it is ready.
type readyFunc func(ctx context.Context) error

// process is one child server process that can be stopped and started
// again with the same arguments.
type process struct {
	name     string
	bin      string
	args     []string
	env      []string // added to the test's environment (KEY=VALUE)
	dir      string
	logPath  string
	moreLogs []string // other log files worth printing on failure
	ready    readyFunc

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when the current child has exited
	exitErr error
}

// spawn starts the child without waiting for readiness.
func (p *process) spawn() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		select {
		case <-p.done:
		default:
			return nil // already running
		}
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: open log: %w", p.name, err)
	}
	fmt.Fprintf(logf, "=== testsvc: %s %s\n", p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Dir = p.dir
	if len(p.env) > 0 {
		cmd.Env = append(os.Environ(), p.env...)
	}
	cmd.Stdout = logf
	cmd.Stderr = logf
	// Own process group, so signals reach any children of the server, and
	// SIGKILL when the thread that started it dies, so a crashed test binary
	// leaves no orphan.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		// The parent-death signal fires when the starting OS thread exits,
		// so this goroutine keeps its thread for the child's whole life.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(done)
		defer logf.Close()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
	}()
	if err := <-started; err != nil {
		<-done
		return fmt.Errorf("%s: start %s: %w", p.name, p.bin, err)
	}
	p.cmd, p.done, p.exitErr = cmd, done, nil
	return nil
}

// running reports whether the child is alive.
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// errExited is returned by waitReady when the child died before it was ready.
var errExited = errors.New("exited before it was ready")

// exited returns an error wrapping errExited when the child has exited,
// and nil while it runs.
func (p *process) exited() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return fmt.Errorf("%s %w (never started)", p.name, errExited)
	}
	select {
	case <-p.done:
		return fmt.Errorf("%s %w (%v)", p.name, errExited, p.exitErr)
	default:
		return nil
	}
}

// waitReady polls probe until it succeeds, the child exits or the timeout
// passes.
func (p *process) waitReady(probe readyFunc, timeout time.Duration) error {
	err := pollReady(probe, timeout, p.exited)
	if err != nil && !errors.Is(err, errExited) {
		return fmt.Errorf("%s %w", p.name, err)
	}
	return err
}

// pollReady polls probe every pollInterval until it succeeds, exited
// reports an error or the timeout passes.
func pollReady(probe readyFunc, timeout time.Duration, exited func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		last := probe(pctx)
		pcancel()
		if last == nil {
			return nil
		}
		if err := exited(); err != nil {
			return fmt.Errorf("%w; last probe: %v", err, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %v", timeout, last)
		case <-tick.C:
		}
	}
}

// start spawns the child and waits until it is ready; on failure the child
// is killed.
func (p *process) start() error {
	if err := p.spawn(); err != nil {
		return err
	}
	if err := p.waitReady(p.ready, readyTimeout); err != nil {
		p.kill()
		return err
	}
	return nil
}

// signal sends sig to the child's process group while the child lives.
func (p *process) signal(sig syscall.Signal) (done chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return nil
	}
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	return p.done
}

// stop sends SIGTERM, waits up to timeout, then SIGKILLs. It returns
// whether the child had to be killed.
func (p *process) stop(timeout time.Duration) (killed bool) {
	done := p.signal(syscall.SIGTERM)
	if done == nil {
		return false
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-done:
		return false
	case <-timer.C:
	}
	p.kill()
	return true
}

// kill sends SIGKILL and waits for the child to be reaped.
func (p *process) kill() {
	if done := p.signal(syscall.SIGKILL); done != nil {
		<-done
	}
}

// logTails returns the end of the process's log files, for failure reports.
func (p *process) logTails() string {
	var b strings.Builder
	for _, path := range append([]string{p.logPath}, p.moreLogs...) {
		fmt.Fprintf(&b, "--- tail of %s:\n%s\n", path, tailFile(path, logTail))
	}
	return b.String()
}

// tailFile returns up to n bytes from the end of the file at path.
func tailFile(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "(" + err.Error() + ")"
	}
	off := st.Size() - n
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return "(" + err.Error() + ")"
	}
	return string(buf)
}

// server is the part shared by every private server type: a process with
// Stop, Kill and Start for tests, and a cleanup that stops it.
type server struct {
	p *process
}

// register arranges for the process to be stopped when the test ends.
func (s *server) register(t testing.TB) {
	t.Cleanup(func() {
		if s.p.stop(stopTimeout) {
			t.Logf("testsvc: %s did not stop within %v after SIGTERM; killed", s.p.name, stopTimeout)
		}
	})
}

// stopT stops the server gracefully (SIGTERM, then SIGKILL after a timeout).
func (s *server) stopT(t testing.TB) {
	t.Helper()
	if s.p.stop(stopTimeout) {
		t.Logf("testsvc: %s did not stop within %v after SIGTERM; killed", s.p.name, stopTimeout)
	}
}

// killT kills the server with SIGKILL and waits until it is gone.
func (s *server) killT(t testing.TB) {
	t.Helper()
	s.p.kill()
}

// startT starts the server again on the same data directory and ports and
// waits until it is ready; it does nothing when the server is running.
func (s *server) startT(t testing.TB) {
	t.Helper()
	if s.p.running() {
		return
	}
	if err := s.p.start(); err != nil {
		t.Log(s.p.logTails())
		t.Fatalf("testsvc: restart %s: %v", s.p.name, err)
	}
}

// launch starts a new server, choosing nports free ports with build and
// retrying on fresh ports when the server dies before it is ready.
func launch(t testing.TB, name string, nports int, build func(ports []int) (*process, error)) *process {
	t.Helper()
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		ports, err := freePorts(nports)
		if err != nil {
			t.Fatalf("testsvc: %s: %v", name, err)
		}
		p, err := build(ports)
		if err != nil {
			t.Fatalf("testsvc: %s: %v", name, err)
		}
		if err = p.start(); err == nil {
			return p
		}
		lastErr = err
		t.Logf("testsvc: %s start attempt %d failed: %v\n%s", name, attempt, err, p.logTails())
		if !errors.Is(err, errExited) {
			break
		}
	}
	t.Fatalf("testsvc: start %s: %v", name, lastErr)
	return nil
}
