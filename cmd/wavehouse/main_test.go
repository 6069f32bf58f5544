package main

import (
	"bytes"
	"context"
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

func TestServeShutsDownCleanlyOnSignal(t *testing.T) {
	ops := freePort(t)
	p := writeFile(t, "config.yaml", "server:\n  listen: 127.0.0.1:0\nops:\n  listen: "+ops+"\nshutdown_timeout: 5s\ndata_dir: "+t.TempDir()+
		"\nstore:\n  chdb:\n    lib_path: "+testsvc.CHDBLib(t)+"\n")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		code, _, _ := runCmd(t, ctx, "serve", "--config", p)
		done <- code
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + ops + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before becoming ready", code)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("serve not ready within 20s")
		}
		time.Sleep(20 * time.Millisecond)
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

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
