package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

func runCmd(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUsageExitCodes(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"config"}, {"config", "lint"}, {"config", "check", "--nope"}, {"serve", "extra"}, {"version", "--nope"}} {
		if code, _, _ := runCmd(t, t.Context(), args...); code != 2 {
			t.Errorf("wavehouse %v exit %d, want 2", args, code)
		}
	}
	if code, out, _ := runCmd(t, t.Context(), "help"); code != 0 || !strings.Contains(out, "config check") {
		t.Errorf("help: %d %q", code, out)
	}
}

func TestConfigCheckValidPrintsEffectiveConfigAndWarnings(t *testing.T) {
	p := writeFile(t, "config.yaml", "mq:\n  embedded:\n    sync: none\n")
	code, out, errs := runCmd(t, t.Context(), "config", "check", "--config", p)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"listen: 127.0.0.1:8080", "backend: chdb", "sync: none", "# warning: mq.embedded.sync is none"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestConfigCheckInvalidExitsOneWithEveryProblem(t *testing.T) {
	p := writeFile(t, "config.yaml", "roles: api\nstore:\n  backend: chdb\nserver:\n  listen: nope\n")
	code, out, errs := runCmd(t, t.Context(), "config", "check", "--config", p)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if out != "" {
		t.Errorf("invalid config printed an effective config:\n%s", out)
	}
	for _, want := range []string{"server.listen", "store.backend: chdb is in-process", "mq.backend: embedded cannot be shared"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

func TestConfigCheckUsesWHConfigAndUnknownKeys(t *testing.T) {
	p := writeFile(t, "config.yaml", "servr:\n  listen: x\n")
	t.Setenv("WH_CONFIG", p)
	code, _, errs := runCmd(t, t.Context(), "config", "check")
	if code != 1 || !strings.Contains(errs, "unknown key servr") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func TestConfigCheckNeverPrintsSecrets(t *testing.T) {
	const secret = "pa55-w0rd-from-file"
	pw := writeFile(t, "ch-password", secret)
	p := writeFile(t, "config.yaml", "store:\n  backend: clickhouse\n  clickhouse:\n    addrs: [127.0.0.1:9000]\n    password_file: "+pw+"\n")
	code, out, errs := runCmd(t, t.Context(), "config", "check", "--config", p)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(out+errs, secret) {
		t.Fatal("config check printed a secret file's content")
	}
	if !strings.Contains(out, pw) {
		t.Errorf("the secret's path should be shown:\n%s", out)
	}
	// An inline credential is refused and still never echoed.
	p = writeFile(t, "config.yaml", "mq:\n  backend: nats\n  nats:\n    urls: [\"nats://admin:"+secret+"@127.0.0.1:4222\"]\n")
	code, out, errs = runCmd(t, t.Context(), "config", "check", "--config", p)
	if code != 1 || strings.Contains(out+errs, secret) {
		t.Fatalf("exit %d; output leaks the inline password: %s %s", code, out, errs)
	}
}

// TestServeShutsDownCleanlyOnSignal boots serve with both listeners on port 0: the
// --listen-addr-file names the addresses they bound (the ops one answers /readyz), and a
// cancelled context (what SIGINT/SIGTERM do) shuts it down with exit 0.
func TestServeShutsDownCleanlyOnSignal(t *testing.T) {
	p := writeFile(t, "config.yaml", "server:\n  listen: 127.0.0.1:0\nops:\n  listen: 127.0.0.1:0\nshutdown_timeout: 5s\ndata_dir: "+t.TempDir()+
		"\nstore:\n  chdb:\n    lib_path: "+testsvc.CHDBLib(t)+"\n")
	addrFile := filepath.Join(t.TempDir(), "addrs.json")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		code, _, _ := runCmd(t, ctx, "serve", "--config", p, "--listen-addr-file", addrFile)
		done <- code
	}()
	var addrs listenAddrs
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil {
			if err := json.Unmarshal(b, &addrs); err != nil {
				t.Fatalf("--listen-addr-file holds %q: %v", b, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no --listen-addr-file within 20s")
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before writing --listen-addr-file", code)
		case <-time.After(20 * time.Millisecond):
		}
	}
	for name, addr := range map[string]string{"server": addrs.Server, "ops": addrs.Ops} {
		if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" {
			t.Fatalf("%s address %q is not a bound host:port", name, addr)
		}
	}
	if addrs.Server == addrs.Ops {
		t.Fatalf("both listeners reported %s", addrs.Ops)
	}
	resp, err := http.Get("http://" + addrs.Ops + "/readyz")
	if err != nil {
		t.Fatalf("the reported ops address: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz on the reported ops address: %d once the file was written, want 200", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + addrs.Server + "/v1/tables"); err != nil {
		t.Fatalf("the reported API address: %v", err)
	} else {
		resp.Body.Close()
	}
	start := time.Now()
	cancel() // what SIGINT/SIGTERM do through signal.NotifyContext
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d after shutdown, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within shutdown_timeout")
	}
	t.Logf("shutdown took %s", time.Since(start))
}

// TestServeFailsWhenAddrFileCannotBeWritten: a process asked to report its addresses that cannot
// do so stops with exit 1 instead of running where nobody can find it.
func TestServeFailsWhenAddrFileCannotBeWritten(t *testing.T) {
	p := writeFile(t, "config.yaml", "server:\n  listen: 127.0.0.1:0\nops:\n  listen: 127.0.0.1:0\nshutdown_timeout: 5s\ndata_dir: "+t.TempDir()+
		"\nstore:\n  chdb:\n    lib_path: "+testsvc.CHDBLib(t)+"\n")
	bad := filepath.Join(t.TempDir(), "missing-dir", "addrs.json")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	code, _, errs := runCmd(t, ctx, "serve", "--config", p, "--listen-addr-file", bad)
	if ctx.Err() != nil {
		t.Fatal("serve kept running although it could not write --listen-addr-file")
	}
	if code != 1 || !strings.Contains(errs, "listen-addr-file") {
		t.Fatalf("exit %d, want 1 naming the flag:\n%s", code, errs)
	}
}
