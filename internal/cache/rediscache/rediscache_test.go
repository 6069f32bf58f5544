package rediscache_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/wavehouse/wavehouse/internal/breaker"
	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/rediscache"
	"github.com/wavehouse/wavehouse/internal/testutil/metrictest"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

func TestValidateNamesEveryBadKey(t *testing.T) {
	err := rediscache.Config{
		Addrs: []string{"nohost", "b:1"}, DB: -1, KeyPrefix: "{x}", Timeout: -1,
		TLS: rediscache.TLSConfig{CertFile: "c.pem"}, MaxValueBytes: -1,
	}.Validate()
	for _, k := range []string{"cache.redis.addrs", "cache.redis.db", "cache.redis.key_prefix", "cache.redis.timeout", "cache.redis.tls", "MaxValueBytes"} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("Validate() = %v; want it to name %s", err, k)
		}
	}
	if err := (rediscache.Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "cache.redis.addrs") {
		t.Errorf("Validate() without addrs = %v; want cache.redis.addrs required", err)
	}
	if err := (rediscache.Config{Addrs: []string{"a:1"}, Cluster: true, DB: 2}).Validate(); err == nil {
		t.Error("Validate accepted db 2 with cluster")
	}
	if err := (rediscache.Config{Addrs: []string{"127.0.0.1:6379"}}).Validate(); err != nil {
		t.Errorf("minimal config = %v; want valid", err)
	}
}

func TestNewReadsPasswordFile(t *testing.T) {
	cfg := rediscache.Config{Addrs: []string{"127.0.0.1:1"}, PasswordFile: filepath.Join(t.TempDir(), "missing")}
	if _, err := rediscache.New(cfg, rediscache.Deps{}); err == nil || !strings.Contains(err.Error(), "cache.redis.password_file") {
		t.Fatalf("New with a missing password file = %v; want an error naming cache.redis.password_file", err)
	}
}

// TestKeysStartWithTenantAndLargeValuesAreCompressed inspects what lands in Redis.
func TestKeysStartWithTenantAndLargeValuesAreCompressed(t *testing.T) {
	addr := testsvc.RedisServer(t).Addr
	cfg := testConfig(t, addr)
	c, err := rediscache.New(cfg, rediscache.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(t.Context()) })
	raw := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = raw.Close() })

	const tenant = "ac:me{1}"
	big := bytes.Repeat([]byte(`{"ts":"2026-01-01","n":1},`), 4000) // 100 KB, compressible
	key := cache.NewKey(tenant, "SELECT big", nil, cache.Versions{})
	if err := c.Set(t.Context(), key, big, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := c.BumpTable(t.Context(), tenant, "events"); err != nil {
		t.Fatal(err)
	}
	if err := c.BumpTenant(t.Context(), tenant); err != nil {
		t.Fatal(err)
	}
	keys, err := raw.Keys(t.Context(), cfg.KeyPrefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 4 { // result, table, writes, epoch
		t.Fatalf("keys under the prefix = %q; want 4", keys)
	}
	tag := cfg.KeyPrefix + "{" + cache.EscapeTenant(tenant) + "}:"
	for _, k := range keys {
		if !strings.HasPrefix(k, tag) {
			t.Errorf("key %q does not start with the tenant tag %q", k, tag)
		}
	}
	stored, err := raw.Get(t.Context(), tag+"r:"+key.Hash).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) >= len(big)/4 {
		t.Errorf("a %d-byte compressible value is stored in %d bytes; want it compressed", len(big), len(stored))
	}
	ttl, err := raw.PTTL(t.Context(), tag+"r:"+key.Hash).Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Errorf("result TTL = %s, %v; want (0, 1m]", ttl, err)
	}
	for _, k := range keys {
		if strings.Contains(k, ":r:") {
			continue
		}
		if ttl, _ := raw.PTTL(t.Context(), k).Result(); ttl != -1 {
			t.Errorf("version counter %q has TTL %s; counters must never expire", k, ttl)
		}
	}
	got, err := c.Get(t.Context(), key)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("Get of the compressed value = %d bytes, %v; want the original %d bytes", len(got), err, len(big))
	}
}

// TestAuthenticatesWithUsernameAndPasswordFile runs against a private server that
// requires an ACL user, since a shared server must not be reconfigured.
func TestAuthenticatesWithUsernameAndPasswordFile(t *testing.T) {
	proc := testsvc.StartRedis(t)
	admin := redis.NewClient(&redis.Options{Addr: proc.Addr})
	t.Cleanup(func() { _ = admin.Close() })
	if err := admin.Do(t.Context(), "ACL", "SETUSER", "wh", "on", ">s3cret", "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(t.Context(), "ACL", "SETUSER", "default", "off").Err(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := cache.NewKey("tenant_auth", "SELECT 1", nil, cache.Versions{})
	for _, tc := range []struct {
		name, user, password string
		ok                   bool
	}{
		{"right password with trailing newline", "wh", "s3cret\n", true},
		{"wrong password", "wh", "nope\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, proc.Addr)
			cfg.Username = tc.user
			cfg.PasswordFile = write(tc.name, tc.password)
			c, err := rediscache.New(cfg, rediscache.Deps{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close(t.Context()) })
			err = c.Set(t.Context(), key, []byte("v"), time.Minute)
			if tc.ok && err != nil {
				t.Fatalf("Set with valid credentials: %v", err)
			}
			if !tc.ok && !errors.Is(err, cache.ErrUnavailable) {
				t.Fatalf("Set with a wrong password = %v; want cache.ErrUnavailable", err)
			}
		})
	}
}

// TestBreakerStateMetric: the breaker's state is exported per Redis target; it reads open
// (2) while the server is down and the cool-down runs, and closed (0) after the trial that
// follows the cool-down reached the restarted server.
func TestBreakerStateMetric(t *testing.T) {
	proc := testsvc.StartRedis(t)
	reg := prometheus.NewPedanticRegistry()
	m, err := breaker.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cfg := testConfig(t, proc.Addr)
	c, err := rediscache.New(cfg, rediscache.Deps{Now: clock, Breakers: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(t.Context()) })
	labels := map[string]string{"component": "redis", "target": proc.Addr}
	key := cache.NewKey("tenant_breaker", "SELECT 1", nil, cache.Versions{})
	if err := c.Set(t.Context(), key, []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if v := metrictest.Value(t, reg, "wavehouse_breaker_state", labels); v != 0 {
		t.Fatalf("state with the server up = %v, want 0 (closed)", v)
	}

	proc.Kill(t)
	for i := range cfg.BreakerFailures {
		if _, err := c.Get(t.Context(), key); !errors.Is(err, cache.ErrUnavailable) || strings.Contains(err.Error(), "breaker open") {
			t.Fatalf("Get %d with the server down = %v, want a connection failure", i, err)
		}
	}
	if _, err := c.Get(t.Context(), key); err == nil || !strings.Contains(err.Error(), "breaker open") {
		t.Fatalf("Get after %d failures = %v, want the breaker open", cfg.BreakerFailures, err)
	}
	if v := metrictest.Value(t, reg, "wavehouse_breaker_state", labels); v != 2 {
		t.Fatalf("state with the server down = %v, want 2 (open)", v)
	}

	proc.Start(t)
	mu.Lock()
	now = now.Add(cfg.BreakerCooldown)
	mu.Unlock()
	if v := metrictest.Value(t, reg, "wavehouse_breaker_state", labels); v != 1 {
		t.Fatalf("state after the cool-down = %v, want 1 (half-open)", v)
	}
	// The restarted server keeps no data: the trial reaches it and misses.
	if _, err := c.Get(t.Context(), key); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("trial Get after the restart = %v, want cache.ErrMiss", err)
	}
	if v := metrictest.Value(t, reg, "wavehouse_breaker_state", labels); v != 0 {
		t.Fatalf("state after a successful trial = %v, want 0 (closed)", v)
	}
	if v := metrictest.Value(t, reg, "wavehouse_breaker_transitions_total", map[string]string{"component": "redis", "target": proc.Addr, "to": "open"}); v != 1 {
		t.Fatalf("transitions to open = %v, want 1", v)
	}
}
