package app

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/settings"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// tenantKey is a generated API key of a test tenant.
type tenantKey struct {
	auth.NewKey
	bearer string
}

func newTenantKey(t *testing.T) tenantKey {
	t.Helper()
	k, err := auth.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return tenantKey{NewKey: k, bearer: "Bearer " + k.Token}
}

// writeTenant writes settings_dir/tenants/<name>.yaml with one key of every scope and extra YAML.
func writeTenant(t *testing.T, dir, name, database string, k tenantKey, extra string) {
	t.Helper()
	body := fmt.Sprintf("database: %s\nkeys:\n  %s\n%s", database, auth.KeyYAML(k.NewKey, settings.Scopes(), nil, time.Time{}), extra)
	if err := os.MkdirAll(filepath.Join(dir, "tenants"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tenants", name+".yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// TestTenantWithUnreachableClickHouseAffectsOnlyItself gives tenant "own" its own ClickHouse
// server and kills it mid-run: "own"'s ingest is still accepted into the queue (validated against
// the schema read before) until its queue budget is full (then 429), its queries fail with 503, while tenant "up" (on the embedded
// engine) ingests and queries normally. When the server is back, "own"'s queued rows land, each
// once. A tenant whose server never answered gets 503, not a blind accept.
func TestTenantWithUnreachableClickHouseAffectsOnlyItself(t *testing.T) {
	ch := testsvc.StartClickHouse(t)
	cfg := testConfig(t)
	cfg.SettingsDir = t.TempDir()
	up, own, never := newTenantKey(t), newTenantKey(t), newTenantKey(t)
	writeTenant(t, cfg.SettingsDir, "up", "up_db", up, "")
	writeTenant(t, cfg.SettingsDir, "own", "own_db", own, fmt.Sprintf("clickhouse:\n  addrs: [%q]\nlimits:\n  queue_max_bytes: 4096\n", ch.NativeAddr))
	writeTenant(t, cfg.SettingsDir, "never", "never_db", never, fmt.Sprintf("clickhouse:\n  addrs: [%q]\n", closedPort(t)))
	a := startApp(t, cfg)
	base := "http://" + a.APIAddr()
	js, nd := "application/json", "application/x-ndjson"
	for name, k := range map[string]tenantKey{"up": up, "own": own} {
		if r := call(t, "POST", base+"/v1/ops/sql", js, `{"sql":"CREATE TABLE ev (id UInt64) ENGINE = MergeTree ORDER BY id"}`, "Authorization", k.bearer); r.code != 200 {
			t.Fatalf("%s: create table: %d %s", name, r.code, r.raw)
		}
	}
	if r := call(t, "POST", base+"/v1/ingest/ev?wait=committed", nd, `{"id":0}`, "Authorization", own.bearer); r.code != 200 {
		t.Fatalf("own: ingest while up: %d %s", r.code, r.raw)
	}

	ch.Kill(t)
	// While the server is down, own's rows queue up to its budget (queue_max_bytes), then 429.
	accepted := 0
	for i := 1; ; i++ {
		r := call(t, "POST", base+"/v1/ingest/ev", nd, fmt.Sprintf(`{"id":%d}`, i), "Authorization", own.bearer)
		if r.code == 429 && strings.Contains(r.raw, "ingest.queue_full") {
			break
		}
		if r.code != 202 {
			t.Fatalf("own: ingest %d while its server is down: %d %s, want 202 (queued) or 429 queue_full", i, r.code, r.raw)
		}
		accepted++
		if i > 2000 {
			t.Fatal("own: the queue budget never filled")
		}
	}
	if accepted < 5 {
		t.Fatalf("own: only %d requests queued before the budget was full", accepted)
	}
	if r := call(t, "POST", base+"/v1/query", js, `{"sql":"SELECT count() AS n FROM ev"}`, "Authorization", own.bearer); r.code != 503 || !strings.Contains(r.raw, "store.unavailable") {
		t.Fatalf("own: query while down: %d %s, want 503 store.unavailable", r.code, r.raw)
	}
	if r := call(t, "POST", base+"/v1/ingest/ev", nd, `{"id":1}`, "Authorization", never.bearer); r.code != 503 {
		t.Fatalf("never: ingest: %d %s, want 503", r.code, r.raw)
	}
	for i := range 3 {
		if r := call(t, "POST", base+"/v1/ingest/ev?wait=committed", nd, fmt.Sprintf(`{"id":%d}`, i), "Authorization", up.bearer); r.code != 200 {
			t.Fatalf("up: ingest %d while own's server is down: %d %s", i, r.code, r.raw)
		}
	}
	if r := call(t, "POST", base+"/v1/query", js, `{"sql":"SELECT count() AS n FROM ev"}`, "Authorization", up.bearer); r.code != 200 || !countIs(r.raw, 3) {
		t.Fatalf("up: count: %d %s", r.code, r.raw)
	}

	ch.Start(t)
	poll.Until(t, 90*time.Second, "every accepted row inserted after the recovery", func() bool {
		r := call(t, "POST", base+"/v1/query", js, `{"sql":"SELECT count() AS n, uniqExact(id) AS u FROM ev"}`, "Authorization", own.bearer)
		return r.code == 200 && countIs(r.raw, accepted+1)
	})
	r := call(t, "POST", base+"/v1/query", js, `{"sql":"SELECT uniqExact(id) AS n FROM ev"}`, "Authorization", own.bearer)
	if !countIs(r.raw, accepted+1) {
		t.Fatalf("own: distinct ids after recovery: %s, want %d", r.raw, accepted+1)
	}
}

// TestTenantsAreSeparatedByKey checks the wiring end to end: the key selects the tenant and its
// database, another tenant's identical table name holds other rows, a request without a key is
// refused once keys exist, and a tenant's own pipe is served only to it.
func TestTenantsAreSeparatedByKey(t *testing.T) {
	cfg := testConfig(t)
	cfg.SettingsDir = t.TempDir()
	ka, kb := newTenantKey(t), newTenantKey(t)
	writeTenant(t, cfg.SettingsDir, "ta", "ta_db", ka, "")
	writeTenant(t, cfg.SettingsDir, "tb", "tb_db", kb, "")
	pipeDir := filepath.Join(cfg.SettingsDir, "tenants", "tb", "pipes")
	if err := os.Rename(filepath.Join(cfg.SettingsDir, "tenants", "tb.yaml"), filepath.Join(cfg.SettingsDir, "tenants", "tb.yaml.tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(pipeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(cfg.SettingsDir, "tenants", "tb.yaml.tmp"), filepath.Join(cfg.SettingsDir, "tenants", "tb", "tenant.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pipeDir, "total.sql"), []byte("SELECT count() AS n FROM ev\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := startApp(t, cfg)
	base := "http://" + a.APIAddr()
	js := "application/json"
	for name, k := range map[string]tenantKey{"ta": ka, "tb": kb} {
		if r := call(t, "POST", base+"/v1/ops/sql", js, `{"sql":"CREATE TABLE ev (id UInt64) ENGINE = MergeTree ORDER BY id"}`, "Authorization", k.bearer); r.code != 200 {
			t.Fatalf("%s: create table: %d %s", name, r.code, r.raw)
		}
	}
	if r := call(t, "POST", base+"/v1/ingest/ev?wait=committed", "application/x-ndjson", "{\"id\":1}\n{\"id\":2}\n", "Authorization", ka.bearer); r.code != 200 {
		t.Fatalf("ta: ingest: %d %s", r.code, r.raw)
	}
	sql := `{"sql":"SELECT count() AS n FROM ev"}`
	if r := call(t, "POST", base+"/v1/query", js, sql, "Authorization", ka.bearer); !countIs(r.raw, 2) {
		t.Fatalf("ta: count: %d %s", r.code, r.raw)
	}
	if r := call(t, "POST", base+"/v1/query", js, sql, "Authorization", kb.bearer); !countIs(r.raw, 0) {
		t.Fatalf("tb sees ta's rows (or its cache entry): %d %s", r.code, r.raw)
	}
	if r := call(t, "POST", base+"/v1/query", js, sql, ""); r.code != 401 || !strings.Contains(r.raw, "auth.missing_key") {
		t.Fatalf("no key: %d %s, want 401 auth.missing_key", r.code, r.raw)
	}
	if r := call(t, "GET", base+"/v1/pipes/total", "", "", "Authorization", kb.bearer); r.code != 200 || !countIs(r.raw, 0) {
		t.Fatalf("tb: own pipe: %d %s", r.code, r.raw)
	}
	if r := call(t, "GET", base+"/v1/pipes/total", "", "", "Authorization", ka.bearer); r.code != 404 {
		t.Fatalf("ta reached tb's pipe: %d %s", r.code, r.raw)
	}
}

// countIs reports whether a JSON query answer holds n in column "n" (64-bit integers may be
// quoted).
func countIs(raw string, n int) bool {
	return strings.Contains(raw, fmt.Sprintf(`"n":"%d"`, n)) || strings.Contains(raw, fmt.Sprintf(`"n":%d`, n))
}

// TestTenantLimitsOnRoutes checks the limits the API applies from the settings: a tenant's
// concurrent-query limit refuses a second query while the first runs, and a key's own rate limit
// refuses that key while the tenant's other key keeps passing.
func TestTenantLimitsOnRoutes(t *testing.T) {
	cfg := testConfig(t)
	cfg.SettingsDir = t.TempDir()
	k, slow := newTenantKey(t), newTenantKey(t)
	body := fmt.Sprintf("database: lim_db\nkeys:\n  %s\n  - {id: %s, hash: %s, scopes: [query], limits: {requests_per_second: 1, burst: 1}}\nlimits:\n  max_concurrent_queries: 1\n",
		auth.KeyYAML(k.NewKey, settings.Scopes(), nil, time.Time{}), slow.ID, slow.Hash)
	if err := os.MkdirAll(filepath.Join(cfg.SettingsDir, "tenants"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.SettingsDir, "tenants", "lim.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	a := startApp(t, cfg)
	base := "http://" + a.APIAddr()
	js := "application/json"

	done := make(chan reply, 1)
	go func() {
		for { // a probe below may hold the one slot for a moment: try again
			r := call(t, "POST", base+"/v1/query?cache=false", js, `{"sql":"SELECT sleep(2) AS s"}`, "Authorization", k.bearer)
			if r.code != 429 {
				done <- r
				return
			}
		}
	}()
	var refused reply
	poll.Until(t, 2*time.Second, "a second concurrent query refused with 429", func() bool {
		refused = call(t, "POST", base+"/v1/query", js, `{"sql":"SELECT 1 AS one"}`, "Authorization", k.bearer)
		return refused.code == 429
	})
	if refused.body["code"] != "limits.queries" || refused.body["limit"] != "max_concurrent_queries" || refused.body["value"] != 1.0 ||
		refused.header.Get("Retry-After") == "" || refused.header.Get("RateLimit-Limit") != "1" {
		t.Fatalf("second concurrent query: %d %v %s, want 429 limits.queries naming max_concurrent_queries = 1, with Retry-After and RateLimit-Limit: 1", refused.code, refused.header, refused.raw)
	}
	if r := <-done; r.code != 200 {
		t.Fatalf("the slow query: %d %s", r.code, r.raw)
	}
	if r := call(t, "POST", base+"/v1/query", js, `{"sql":"SELECT 1 AS one"}`, "Authorization", k.bearer); r.code != 200 {
		t.Fatalf("after the slow query ended: %d %s", r.code, r.raw)
	}

	if r := call(t, "POST", base+"/v1/query", js, `{"sql":"SELECT 1 AS one"}`, "Authorization", slow.bearer); r.code != 200 {
		t.Fatalf("rate-limited key, first request: %d %s", r.code, r.raw)
	}
	r := call(t, "POST", base+"/v1/query", js, `{"sql":"SELECT 1 AS one"}`, "Authorization", slow.bearer)
	if r.code != 429 || !strings.Contains(r.raw, "limits.requests") {
		t.Fatalf("rate-limited key, second request: %d %s, want 429 limits.requests", r.code, r.raw)
	}
	if r := call(t, "POST", base+"/v1/query", js, `{"sql":"SELECT 1 AS one"}`, "Authorization", k.bearer); r.code != 200 {
		t.Fatalf("the tenant's other key after its sibling was limited: %d %s", r.code, r.raw)
	}
}
