package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// testConfig is the all-embedded default with its data in a temp dir and ports chosen by the OS.
func testConfig(t *testing.T) config.Config {
	t.Helper()
	t.Setenv("WH_DATA_DIR", t.TempDir())
	t.Setenv("WH_STORE_CHDB_LIB_PATH", testsvc.CHDBLib(t))
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Ops.Listen = "127.0.0.1:0"
	cfg.InstanceID = "test-0000"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startApp runs an App until the test ends and returns it once every component has started.
func startApp(t *testing.T, cfg config.Config) *App {
	t.Helper()
	return startAppWithLog(t, cfg, quietLog())
}

// startAppWithLog is startApp with the given logger.
func startAppWithLog(t *testing.T, cfg config.Config, log *slog.Logger) *App {
	t.Helper()
	a, err := New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	select {
	case <-a.Started():
	case err := <-done:
		t.Fatalf("app stopped during start: %v", err)
	}
	return a
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestOpsListenerServesProbesVersionMetrics(t *testing.T) {
	a := startApp(t, testConfig(t))
	base := "http://" + a.OpsAddr()
	if code, body := get(t, base+"/livez"); code != 200 || strings.TrimSpace(body) != "ok" {
		t.Errorf("/livez = %d %q", code, body)
	}
	code, body := get(t, base+"/readyz")
	if code != 200 {
		t.Errorf("/readyz = %d %s", code, body)
	}
	code, body = get(t, base+"/version")
	var v map[string]string
	if err := json.Unmarshal([]byte(body), &v); code != 200 || err != nil || v["go_version"] == "" || v["version"] == "" || v["commit"] == "" {
		t.Errorf("/version = %d %s", code, body)
	}
	if code, body := get(t, base+"/metrics"); code != 200 || !strings.Contains(body, "go_goroutines") || !strings.Contains(body, "process_") {
		t.Errorf("/metrics = %d, lacks runtime/process collectors", code)
	}
	if code, _ := get(t, base+"/debug/pprof/"); code != 200 {
		t.Errorf("ops /debug/pprof/ = %d", code)
	}
}

func TestAPIListenerNeverServesOpsRoutes(t *testing.T) {
	a := startApp(t, testConfig(t))
	base := "http://" + a.APIAddr()
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/profile?seconds=1", "/debug/pprof/heap", "/metrics", "/livez", "/readyz", "/version"} {
		code, body := get(t, base+path)
		if code != http.StatusNotFound {
			t.Errorf("API %s = %d, want 404", path, code)
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(body), &e); err != nil || e["code"] != "not_found" {
			t.Errorf("API %s body %q is not a JSON not_found error", path, body)
		}
	}
}

func TestProcessWithoutAPIRoleServesOnlyOps(t *testing.T) {
	cfg := testConfig(t)
	cfg.Roles = config.Roles{config.RoleIngest, config.RoleSweeper}
	cfg.MQ.Backend, cfg.MQ.NATS.URLs, cfg.Coord.Backend = "nats", []string{"nats://127.0.0.1:1"}, "nats"
	cfg.Store.Backend, cfg.Store.ClickHouse.Addrs = "clickhouse", []string{"127.0.0.1:1"}
	cfg.Cache.Backend, cfg.Cache.Redis.Addrs = "redis", []string{"127.0.0.1:1"}
	a, err := New(cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if a.apiLn != nil {
		t.Fatal("a process without the api role built an API listener")
	}
	if got := componentsFor(cfg.Roles); strings.Contains(strings.Join(got, ","), compAPI) {
		t.Fatalf("components %v include the api listener", got)
	}
}

func TestListenerPortTakenFailsBootNamingComponent(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := testConfig(t)
	cfg.Ops.Listen = taken.Addr().String()
	b, err := New(cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	err = b.Run(t.Context())
	var fe *FatalError
	if !errors.As(err, &fe) || fe.Component != compOps || !strings.Contains(err.Error(), "ops: start: listen on") {
		t.Fatalf("got %v, want the ops listener's start error", err)
	}
}
