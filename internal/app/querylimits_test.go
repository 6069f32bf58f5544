package app

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestTenantQueryLimitsOnRoutes gives two tenants on each store (the embedded chDB engine and a
// ClickHouse 18.16 server) different query limits from the settings directory and sends both
// the same queries: the tight tenant gets 422 query.limit_exceeded naming max_result_rows,
// max_result_bytes or max_execution_time with its value, on /v1/query and through a pipe, while
// the roomy one (boot defaults for bytes and time) gets its rows. A reload that lowers the roomy
// tenant's row limit applies to the next queries, even to one whose result is cached. The tight
// tenant's cache_ttl of 1s expires its entry while the roomy tenant's (boot default) still hits.
func TestTenantQueryLimitsOnRoutes(t *testing.T) {
	ch := testsvc.StartClickHouse(t)
	cfg := testConfig(t)
	cfg.SettingsDir = t.TempDir()
	cfg.SettingsPollInterval = config.Duration(50 * time.Millisecond)
	const tight = "limits: {max_result_rows: 10, max_result_bytes: 2000, max_execution_time: 1s, cache_ttl: 1s}\n"
	own := fmt.Sprintf("clickhouse:\n  addrs: [%q]\n", ch.NativeAddr)
	keys := map[string]tenantKey{}
	for _, store := range []string{"chdb", "ch"} {
		server := ""
		if store == "ch" {
			server = own
		}
		for _, name := range []string{"tight", "roomy"} {
			extra := server
			if name == "tight" {
				extra += tight
			}
			k := newTenantKey(t)
			keys[name+"_"+store] = k
			writeTenant(t, cfg.SettingsDir, name+"_"+store, name+"_"+store+"_db", k, extra)
		}
	}
	writePipe(t, cfg.SettingsDir, "hundred", "SELECT id FROM ev\n")
	a := startApp(t, cfg)
	base := "http://" + a.APIAddr()
	js := "application/json"
	query := func(t *testing.T, tenant, sql string) reply {
		return call(t, "POST", base+"/v1/query", js, `{"sql":"`+sql+`"}`, "Authorization", keys[tenant].bearer)
	}
	wantLimit := func(t *testing.T, what string, r reply, limit string, value float64) {
		t.Helper()
		if r.code != 422 || r.body["code"] != "query.limit_exceeded" || r.body["limit"] != limit || r.body["value"] != value || r.body["retryable"] != false {
			t.Fatalf("%s: %d %.300s, want 422 query.limit_exceeded with limit %s = %v", what, r.code, r.raw, limit, value)
		}
	}
	wantRows := func(t *testing.T, what string, r reply, rows float64) {
		t.Helper()
		if r.code != 200 || r.body["rows"] != rows {
			t.Fatalf("%s: %d %.300s, want 200 with %v rows", what, r.code, r.raw, rows)
		}
	}
	for _, store := range []string{"chdb", "ch"} {
		t.Run(store, func(t *testing.T) {
			tightT, roomyT := "tight_"+store, "roomy_"+store
			for _, name := range []string{tightT, roomyT} {
				k := keys[name]
				if r := call(t, "POST", base+"/v1/ops/sql", js, `{"sql":"CREATE TABLE ev (id UInt64) ENGINE = MergeTree ORDER BY id"}`, "Authorization", k.bearer); r.code != 200 {
					t.Fatalf("%s: create table: %d %s", name, r.code, r.raw)
				}
				if r := call(t, "POST", base+"/v1/ingest/ev?wait=committed", "application/x-ndjson", ndjsonIDs(100), "Authorization", k.bearer); r.code != 200 {
					t.Fatalf("%s: ingest: %d %s", name, r.code, r.raw)
				}
			}
			const hundred = "SELECT id FROM ev"
			wantLimit(t, "tight: 100 rows", query(t, tightT, hundred), "max_result_rows", 10)
			wantRows(t, "roomy: 100 rows", query(t, roomyT, hundred), 100)
			if r := query(t, roomyT, hundred); r.header.Get("X-Cache") != "HIT" {
				t.Fatalf("roomy: second query: X-Cache %q, want HIT", r.header.Get("X-Cache"))
			}

			// Without FROM, chDB 26.5 applies no result limit: the gateway's row count does.
			wantLimit(t, "tight: 100 rows without FROM", query(t, tightT, "SELECT arrayJoin(range(100)) AS a"), "max_result_rows", 10)
			wantRows(t, "roomy: 100 rows without FROM", query(t, roomyT, "SELECT arrayJoin(range(100)) AS a"), 100)

			const wide = "SELECT range(5000) AS a FROM ev LIMIT 1" // one row of 10 KB or more
			wantLimit(t, "tight: one wide row", query(t, tightT, wide), "max_result_bytes", 2000)
			wantRows(t, "roomy: one wide row", query(t, roomyT, wide), 1)

			const slow = "SELECT sleep(2) AS s"
			wantLimit(t, "tight: sleep(2)", query(t, tightT, slow), "max_execution_time", 1)
			wantRows(t, "roomy: sleep(2)", query(t, roomyT, slow), 1)

			pipe := func(t *testing.T, tenant string) reply {
				return call(t, "GET", base+"/v1/pipes/hundred", "", "", "Authorization", keys[tenant].bearer)
			}
			wantLimit(t, "tight: pipe of 100 rows", pipe(t, tightT), "max_result_rows", 10)
			wantRows(t, "roomy: pipe of 100 rows", pipe(t, roomyT), 100)

			// A reload that lowers the roomy tenant's row limit, its 100 rows cached.
			// The settings poll (every 50ms) applies the change; until then the old limit holds.
			writeTenant(t, cfg.SettingsDir, roomyT, roomyT+"_db", keys[roomyT], serverOf(store, own)+"limits: {max_result_rows: 5}\n")
			var r reply
			poll.Until(t, 10*time.Second, "the lowered row limit applies to the cached query", func() bool {
				r = query(t, roomyT, hundred)
				return r.code != 200
			})
			wantLimit(t, "roomy after its limit was lowered to 5", r, "max_result_rows", 5)
			writeTenant(t, cfg.SettingsDir, roomyT, roomyT+"_db", keys[roomyT], serverOf(store, own))
			poll.Until(t, 10*time.Second, "the row limit is raised again", func() bool { return query(t, roomyT, hundred).code == 200 })

			// cache_ttl: the tight tenant's entry (1s) expires, the roomy one's (60s) does not.
			const count = "SELECT count() AS n FROM ev"
			for _, tenant := range []string{roomyT, tightT} {
				if r := query(t, tenant, count); r.code != 200 || r.header.Get("X-Cache") != "MISS" {
					t.Fatalf("%s: first count: %d X-Cache %q %s", tenant, r.code, r.header.Get("X-Cache"), r.raw)
				}
			}
			start := time.Now()
			poll.Until(t, 10*time.Second, "the tight tenant's cached count expires after its cache_ttl of 1s", func() bool {
				return query(t, tightT, count).header.Get("X-Cache") == "MISS"
			})
			if el := time.Since(start); el < 500*time.Millisecond {
				t.Fatalf("the tight tenant's entry expired after %v, before its cache_ttl of 1s", el)
			}
			if r := query(t, roomyT, count); r.header.Get("X-Cache") != "HIT" {
				t.Fatalf("roomy: count after the tight entry expired: X-Cache %q, want HIT (cache_ttl default 60s)", r.header.Get("X-Cache"))
			}
		})
	}
}

// TestDefaultQueryGateWithoutSettings runs the all-embedded laptop mode (no settings directory,
// anonymous on loopback) with limits.max_concurrent_queries: 1: a second query while one runs
// gets 429 naming the limit, so the boot default is the gate even with no tenant configured.
func TestDefaultQueryGateWithoutSettings(t *testing.T) {
	cfg := testConfig(t)
	cfg.SettingsDir = filepath.Join(t.TempDir(), "absent")
	cfg.Limits.MaxConcurrentQueries = 1
	a := startApp(t, cfg)
	base := "http://" + a.APIAddr()
	done := make(chan reply, 1)
	go func() {
		for { // a probe below may hold the one slot for a moment: try again
			if r := call(t, "POST", base+"/v1/query?cache=false", "application/json", `{"sql":"SELECT sleep(2) AS s"}`); r.code != 429 {
				done <- r
				return
			}
		}
	}()
	var refused reply
	poll.Until(t, 2*time.Second, "a second query is refused while the first holds the one slot", func() bool {
		refused = call(t, "POST", base+"/v1/query", "application/json", `{"sql":"SELECT 1 AS one"}`)
		return refused.code == 429
	})
	if refused.body["limit"] != "max_concurrent_queries" || refused.body["value"] != 1.0 || refused.header.Get("Retry-After") == "" {
		t.Fatalf("second query: %d %s, want 429 naming max_concurrent_queries = 1 with Retry-After", refused.code, refused.raw)
	}
	if r := <-done; r.code != 200 {
		t.Fatalf("the slow query: %d %s", r.code, r.raw)
	}
}

func serverOf(store, own string) string {
	if store == "ch" {
		return own
	}
	return ""
}

func ndjsonIDs(n int) string {
	var b strings.Builder
	for i := range n {
		_ = json.NewEncoder(&b).Encode(map[string]int{"id": i})
	}
	return b.String()
}

// writePipe writes a pipe every tenant has.
func writePipe(t *testing.T, dir, name, sql string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "pipes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pipes", name+".sql"), []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}
}
