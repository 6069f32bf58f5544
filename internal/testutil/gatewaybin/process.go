package gatewaybin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
	// ListenAddrs says the process is `wavehouse serve` with its listeners on port 0
	// (server.listen and ops.listen 127.0.0.1:0 in its config), so that no port is ever picked
	// before it is bound: every launch appends --listen-addr-file, Start waits for that file, then
	// for /readyz on the ops address it names, and APIURL and OpsURL return those addresses. The
	// following starts re-bind the addresses of the first one (WH_SERVER_LISTEN, WH_OPS_LISTEN),
	// so a restarted process comes back where its clients expect it; see Start for the one race
	// that leaves.
	ListenAddrs bool
	// Ops is the base URL of the ops listener (http://host:port) of a process that does not
	// report its addresses (ListenAddrs false): Start waits until its /readyz answers 200. With
	// neither, Start only launches the process.
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
	args     []string // appended to the arguments of the following starts (SetArgs)
	addrs    listenAddrs
}

// listenAddrs is what `wavehouse serve --listen-addr-file` writes: the addresses its listeners
// bound.
type listenAddrs struct {
	Server string `json:"server"`
	Ops    string `json:"ops"`
}

// errExited reports a process that exited before it was ready.
var errExited = errors.New("exited before it was ready")

// addrInUse is how a listener that cannot bind its address fails (the kernel's EADDRINUSE text).
const addrInUse = "address already in use"

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
	if cfg.ListenAddrs && cfg.Ops != "" {
		t.Fatal("gatewaybin: ProcessConfig.Ops is for processes without ListenAddrs")
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

// Dir returns the process's working directory (ProcessConfig.Dir).
func (p *Process) Dir() string { return p.cfg.Dir }

// LogPath returns the file holding the process's output.
func (p *Process) LogPath() string { return p.cfg.LogPath }

// SetEnv sets KEY=VALUE variables added, after ProcessConfig.Env, to the environment of the
// following starts (a test hook for one run, say); with no arguments it clears them.
func (p *Process) SetEnv(kv ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.env = append([]string(nil), kv...)
}

// SetArgs sets arguments appended, after ProcessConfig.Args, to the command line of the
// following starts (a fault flag for one run, say); with no arguments it clears them.
func (p *Process) SetArgs(args ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.args = append([]string(nil), args...)
}

// APIURL is the base URL (http://host:port) of the API listener the process reported, or ""
// before its first start reported it, or without the api role. A wildcard host (0.0.0.0, ::)
// is given as 127.0.0.1.
func (p *Process) APIURL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return baseURL(p.addrs.Server)
}

// OpsURL is the base URL of the ops listener: the one the process reported (ListenAddrs), else
// ProcessConfig.Ops.
func (p *Process) OpsURL() string {
	if !p.cfg.ListenAddrs {
		return p.cfg.Ops
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return baseURL(p.addrs.Ops)
}

// baseURL turns a bound address into a URL a client on this host can reach.
func baseURL(addr string) string {
	if addr == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// addrFile is where the process reports its listener addresses (ListenAddrs).
func (p *Process) addrFile() string {
	return filepath.Join(p.cfg.Dir, p.cfg.Name+".listen-addrs.json")
}

// waits reports whether Start waits for readiness.
func (p *Process) waits() bool { return p.cfg.ListenAddrs || p.cfg.Ops != "" }

// Start launches the process and, when it has an ops listener to wait on (ListenAddrs or
// ProcessConfig.Ops), waits until it is ready.
//
// A restart re-binds the addresses of the first start, and that leaves one race: while the
// process is down, another socket on this host can take its port, say an outgoing connection
// handed that port as its local one (Linux gives connect() and bind(0) ports of opposite parity
// first, so it is rare). Such a holder is transient, so a restart that fails with "address
// already in use" is launched again until ReadyTimeout; the first start binds port 0 and
// cannot collide at all.
func (p *Process) Start(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(p.cfg.ReadyTimeout)
	for {
		p.Launch(t)
		if !p.waits() {
			return
		}
		err := p.waitReady(deadline)
		if err == nil {
			return
		}
		if errors.Is(err, errExited) && p.pinned() && strings.Contains(p.lastStartOutput(), addrInUse) && time.Now().Before(deadline) {
			p.detach()
			t.Logf("%s could not re-bind its addresses (%s); starting it again", p.cfg.Name, addrInUse)
			<-time.After(200 * time.Millisecond) // paces the relaunches; the holder is another process
			continue
		}
		t.Fatalf("%s %v:\n%s", p.cfg.Name, err, p.Tail(4000))
	}
}

// pinned reports whether the following starts re-bind known addresses.
func (p *Process) pinned() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addrs.Ops != ""
}

// lastStartOutput returns what the latest start wrote so far.
func (p *Process) lastStartOutput() string {
	p.mu.Lock()
	marker := fmt.Sprintf("=== %s start %d\n", p.cfg.Name, p.starts)
	p.mu.Unlock()
	out := p.Output()
	if i := strings.LastIndex(out, marker); i >= 0 {
		return out[i:]
	}
	return out
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
	args := append(slices.Clone(p.cfg.Args), p.args...)
	env := append(append(Env(), p.cfg.Env...), p.env...)
	if p.cfg.ListenAddrs {
		if err := os.Remove(p.addrFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
			logf.Close()
			t.Fatal(err)
		}
		args = append(args, "--listen-addr-file", p.addrFile())
		// Variables override the config file: a restart comes back on the same addresses.
		if p.addrs.Server != "" {
			env = append(env, "WH_SERVER_LISTEN="+p.addrs.Server)
		}
		if p.addrs.Ops != "" {
			env = append(env, "WH_OPS_LISTEN="+p.addrs.Ops)
		}
	}
	p.starts++
	fmt.Fprintf(logf, "=== %s start %d\n", p.cfg.Name, p.starts)
	cmd := exec.Command(p.cfg.Binary, args...)
	cmd.Dir = p.cfg.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = env
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

// WaitReady waits until the process reported its addresses (ListenAddrs) and its ops
// listener's /readyz answers 200, failing the test when the process exits first or ReadyTimeout
// passes.
func (p *Process) WaitReady(t testing.TB) {
	t.Helper()
	if !p.waits() {
		t.Fatalf("%s: no ops listener to wait on", p.cfg.Name)
	}
	if err := p.waitReady(time.Now().Add(p.cfg.ReadyTimeout)); err != nil {
		t.Fatalf("%s %v:\n%s", p.cfg.Name, err, p.Tail(4000))
	}
}

// waitReady polls until the process reported its addresses (ListenAddrs) and /readyz answers
// 200, the process exits (errExited) or the deadline passes.
func (p *Process) waitReady(deadline time.Time) error {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return errors.New("is not running")
	}
	defer p.client.CloseIdleConnections()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for {
		select {
		case <-done:
			return errExited
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s", p.cfg.ReadyTimeout)
		case <-time.After(50 * time.Millisecond):
		}
		if p.cfg.ListenAddrs {
			if ok, err := p.readAddrs(); err != nil {
				return err
			} else if !ok {
				continue
			}
		}
		if p.ready(ctx) {
			return nil
		}
	}
}

// readAddrs reads the address file once it exists; the first addresses read are kept for the
// following starts, which must report the same ones.
func (p *Process) readAddrs() (bool, error) {
	b, err := os.ReadFile(p.addrFile())
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var got listenAddrs
	if err := json.Unmarshal(b, &got); err != nil || got.Ops == "" {
		return false, fmt.Errorf("reported unusable addresses in %s: %q (%v)", p.addrFile(), b, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.addrs.Ops == "":
		p.addrs = got
	case got != p.addrs:
		return false, fmt.Errorf("came back on %+v, not on the first start's %+v", got, p.addrs)
	}
	return true, nil
}

func (p *Process) ready(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.OpsURL()+"/readyz", nil)
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
