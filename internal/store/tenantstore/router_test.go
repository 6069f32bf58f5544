package tenantstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/settings"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/store/tenantstore"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// snapshot writes tenant files into a fresh settings directory and loads it.
func snapshot(t *testing.T, tenants map[string]string) *settings.Snapshot {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tenants"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range tenants {
		if err := os.WriteFile(filepath.Join(dir, "tenants", name+".yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := settings.Load(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// opener opens real clickhouse stores and records what it opened.
type opener struct {
	mu     sync.Mutex
	opened []string
}

func (o *opener) open(tenant string, t settings.Target) (store.Store, error) {
	o.mu.Lock()
	o.opened = append(o.opened, tenant)
	o.mu.Unlock()
	cfg := clickhousestore.Config{DialTimeout: time.Second}
	cfg.Addr = t.Addrs
	return clickhousestore.New(cfg, clickhousestore.Deps{})
}

// TestRouterFollowsTenantTargets routes a tenant with its own (unreachable) server away from the
// default store, leaves other tenants on the default, and moves the tenant back when its override
// is removed by a later snapshot.
func TestRouterFollowsTenantTargets(t *testing.T) {
	ch := testsvc.ClickHouseServer(t)
	defCfg := clickhousestore.Config{DialTimeout: 2 * time.Second}
	defCfg.Addr = []string{ch.NativeAddr}
	def, err := clickhousestore.New(defCfg, clickhousestore.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	o := &opener{}
	r := tenantstore.New(def, o.open, nil)
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	ctx := t.Context()

	down := fmt.Sprintf("database: default\nclickhouse:\n  addrs: [%q]\n", closedAddr(t))
	if err := r.Apply(snapshot(t, map[string]string{"own": down, "plain": "database: default\n"})); err != nil {
		t.Fatal(err)
	}
	if err := r.Ping(ctx, store.Target{Tenant: "plain", Database: "default"}); err != nil {
		t.Fatalf("plain tenant on the default store: %v", err)
	}
	err = r.Ping(ctx, store.Target{Tenant: "own", Database: "default"})
	if err == nil || !store.IsTransient(err) {
		t.Fatalf("own tenant's unreachable server: err %v, want a transient error", err)
	}
	// Applying the same targets again opens nothing new.
	if err := r.Apply(snapshot(t, map[string]string{"own": down, "plain": "database: default\n"})); err != nil {
		t.Fatal(err)
	}
	if len(o.opened) != 1 {
		t.Fatalf("opened %v, want one store for tenant own", o.opened)
	}
	if err := r.Apply(snapshot(t, map[string]string{"own": "database: default\n"})); err != nil {
		t.Fatal(err)
	}
	if err := r.Ping(ctx, store.Target{Tenant: "own", Database: "default"}); err != nil {
		t.Fatalf("own tenant after its override was removed: %v", err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Ping(ctx, store.Target{Tenant: "plain", Database: "default"}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}
