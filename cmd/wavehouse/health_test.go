package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/ops"
	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

func TestHealthUsageAndConfigErrors(t *testing.T) {
	for _, args := range [][]string{
		{"health", "extra"}, {"health", "--config", "x.yaml", "--url", "http://127.0.0.1:1"},
		{"health", "--url", "127.0.0.1:9090"}, {"health", "--url", "http://127.0.0.1:1", "--timeout", "0s"},
	} {
		if code, _, _ := runCmd(t, t.Context(), args...); code != 2 {
			t.Errorf("wavehouse %v exit %d, want 2", args, code)
		}
	}
	p := writeFile(t, "config.yaml", "ops:\n  listen: 127.0.0.1:0\n")
	if code, _, errs := runCmd(t, t.Context(), "health", "--config", p); code != 1 || !strings.Contains(errs, "port 0") {
		t.Errorf("health on a port-0 config: exit %d, %q; want 1 naming port 0", code, errs)
	}
	for listen, want := range map[string]string{
		"0.0.0.0:9090": "http://127.0.0.1:9090/readyz", ":9090": "http://127.0.0.1:9090/readyz",
		"[::]:9090": "http://[::1]:9090/readyz", "10.1.2.3:9091": "http://10.1.2.3:9091/readyz",
	} {
		if got, err := probeURL(listen); err != nil || got != want {
			t.Errorf("probeURL(%q) = %q, %v; want %q", listen, got, err, want)
		}
	}
}

// TestHealthAgainstRealGateway runs `wavehouse health` (the binary) against a running gateway:
// exit 0 while it is ready, by --url and by --config; non-zero against a closed port; and
// non-zero, naming the reason, while the gateway drains — held in that state by a request whose
// body never finishes arriving (its handler is reading it: the server sent 100 Continue).
func TestHealthAgainstRealGateway(t *testing.T) {
	bin := buildGateway(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf("server:\n  listen: 127.0.0.1:0\nops:\n  listen: 127.0.0.1:0\ndata_dir: %s\nshutdown_timeout: 2m\nlog:\n  level: warn\n", dir)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	proc := gatewaybin.StartProcess(t, gatewaybin.ProcessConfig{
		Name: "gateway", Binary: bin, Args: []string{"serve", "--config", cfgPath}, Env: []string{"CHDB_LIB_PATH=" + testsvc.CHDBLib(t)},
		Dir: dir, ListenAddrs: true, ReadyTimeout: 60 * time.Second, StopTimeout: 20 * time.Second,
	})
	if code, out := gatewaybin.Run(t, bin, nil, "health", "--url", proc.OpsURL()); code != 0 || strings.TrimSpace(out) != "ready" {
		t.Fatalf("health --url on a ready gateway: exit %d, %q", code, out)
	}
	opsAddr := strings.TrimPrefix(proc.OpsURL(), "http://")
	if code, out := gatewaybin.Run(t, bin, []string{"WH_OPS_LISTEN=" + opsAddr}, "health", "--config", cfgPath); code != 0 {
		t.Fatalf("health --config on a ready gateway: exit %d, %q", code, out)
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	if code, out := gatewaybin.Run(t, bin, nil, "health", "--url", "http://"+closedAddr, "--timeout", "1s"); code != 1 || !strings.Contains(out, "connection refused") {
		t.Fatalf("health against a closed port: exit %d, %q; want 1, connection refused", code, out)
	}

	// A query whose body stops after its first byte: once the server answers 100 Continue, the
	// handler is reading the body, so a graceful shutdown waits for it and /readyz says 503.
	conn, err := net.Dial("tcp", strings.TrimPrefix(proc.APIURL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprint(conn, "POST /v1/query HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(status, "100 Continue") {
		t.Fatalf("waiting for 100 Continue: %q, %v", status, err)
	}
	if _, err := conn.Write([]byte("{")); err != nil {
		t.Fatal(err)
	}
	proc.Signal(t, syscall.SIGTERM)
	var out string
	poll.Until(t, 30*time.Second, "health to fail while draining", func() bool {
		var code int
		code, out = gatewaybin.Run(t, bin, nil, "health", "--url", proc.OpsURL())
		return code == 1
	})
	if !strings.Contains(out, "503") || !strings.Contains(out, "shutting down") {
		t.Errorf("health while draining said %q; want the 503 and its reason", out)
	}
	if !proc.Running() {
		t.Fatal("the gateway exited while a request was in flight: the draining state was not held")
	}
	conn.Close()
	if code := proc.Wait(t, 30*time.Second); code != 0 {
		t.Errorf("gateway exit %d after the drain", code)
	}
}

// TestHealthReadsTheReadyzAnswer runs health against the ops handler itself: degraded is ready
// (exit 0, naming the dependency), starting is not (exit 1 with the reason).
func TestHealthReadsTheReadyzAnswer(t *testing.T) {
	degraded := ops.NewReadiness()
	degraded.Started()
	degraded.Degrade("store", "unavailable: dial tcp 10.0.0.7:9000: connect: connection refused")
	starting := ops.NewReadiness("mq")
	for _, c := range []struct {
		r        *ops.Readiness
		code     int
		out, err string
	}{
		{degraded, 0, "ready, degraded: store: unavailable: dial tcp 10.0.0.7:9000", ""},
		{starting, 1, "", "answered 503: mq not up, starting"},
	} {
		srv := httptest.NewServer(ops.Handler(ops.Options{Readiness: c.r, Gatherer: prometheus.NewRegistry()}))
		code, out, errs := runCmd(t, t.Context(), "health", "--url", srv.URL)
		srv.Close()
		if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errs, c.err) {
			t.Errorf("health: exit %d, stdout %q, stderr %q; want %d, %q, %q", code, out, errs, c.code, c.out, c.err)
		}
	}
}
