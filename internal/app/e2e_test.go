package app

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

type reply struct {
	code   int
	header http.Header
	body   map[string]any
	raw    string
}

func call(t *testing.T, method, url, ctype string, body string, hdr ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{code: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

// opsCall calls an operator route (path under /v1/ops/) of a's default tenant as the operator,
// with the key a generated in its data_dir at boot (auth.operator_key_file unset).
func opsCall(t *testing.T, a *App, method, path, body string) reply {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	ctype := ""
	if body != "" {
		ctype = "application/json"
	}
	return call(t, method, "http://"+a.APIAddr()+path+sep+"tenant="+gatewaybin.DefaultTenant, ctype, body,
		"Authorization", "Bearer "+gatewaybin.OperatorKey(t, a.cfg.DataDir))
}

// TestEmbeddedDefaultEndToEnd drives the all-embedded process through its public API: DDL,
// ingest (atomic, partial, wait=committed, idempotent), query through the cache, tables, and the
// dead-letter routes.
func TestEmbeddedDefaultEndToEnd(t *testing.T) {
	endToEnd(t, testConfig(t))
}

// TestEndToEndWithRedisCache is the same with the shared cache: read-your-writes must hold when
// the insert's version bump goes through Redis.
func TestEndToEndWithRedisCache(t *testing.T) {
	cfg := testConfig(t)
	cfg.Cache.Backend = "redis"
	cfg.Cache.Redis.Addrs = []string{testsvc.RedisServer(t).Addr}
	cfg.Cache.Redis.KeyPrefix = testsvc.UniqueName(t, "e2e") + ":"
	// The 100 ms default bounds a healthy Redis; on a loaded CI box a call can take longer, and a
	// timed-out lookup or bump is (correctly) a BYPASS. This test is about the path, not the bound.
	cfg.Cache.Redis.Timeout = config.Duration(5 * time.Second)
	endToEnd(t, cfg)
}

func endToEnd(t *testing.T, cfg config.Config) {
	cfg.Ingest.Flush.MaxWait = config.Duration(50 * time.Millisecond)
	a := startApp(t, cfg)
	base := "http://" + a.APIAddr()
	const js = "application/json"

	if r := opsCall(t, a, "POST", "/v1/ops/sql", `{"sql":"CREATE TABLE ev (id UInt64, user String, n Nullable(Int32)) ENGINE = MergeTree ORDER BY id"}`); r.code != 200 {
		t.Fatalf("create: %d %s", r.code, r.raw)
	}
	r := call(t, "POST", base+"/v1/ingest/ev?wait=committed", "application/x-ndjson", "{\"id\":18446744073709551615,\"user\":\"ann\"}\n{\"id\":2,\"user\":\"bö\",\"n\":-5}\n")
	if r.code != 200 || r.body["committed"] != true || r.body["accepted"].(float64) != 2 {
		t.Fatalf("ingest wait=committed: %d %s", r.code, r.raw)
	}
	// The writer's breaker for the tenant is on the ops listener's /metrics, closed.
	if code, body := get(t, "http://"+a.OpsAddr()+"/metrics"); code != 200 || !strings.Contains(body, `wavehouse_breaker_state{component="writer",target="default"} 0`) {
		t.Errorf("/metrics = %d, lacks wavehouse_breaker_state{component=\"writer\",target=\"default\"} 0", code)
	}
	q := call(t, "POST", base+"/v1/query", js, `{"sql":"SELECT id, user, n FROM ev ORDER BY id"}`)
	if q.code != 200 || q.header.Get("X-Cache") != "MISS" || !strings.Contains(q.raw, `"id":18446744073709551615`) || !strings.Contains(q.raw, `"n":-5`) {
		t.Fatalf("query: %d %s %s", q.code, q.header.Get("X-Cache"), q.raw)
	}
	if q := call(t, "POST", base+"/v1/query", js, `{"sql":"SELECT id, user, n FROM ev ORDER BY id"}`); q.header.Get("X-Cache") != "HIT" {
		t.Fatalf("second query not a hit: %s", q.header.Get("X-Cache"))
	}
	// The miss, the fill and the hit are on /metrics, labelled with the backend.
	_, metrics := get(t, "http://"+a.OpsAddr()+"/metrics")
	for _, name := range []string{"wavehouse_cache_misses_total", "wavehouse_cache_fills_total", "wavehouse_cache_hits_total"} {
		m := regexp.MustCompile(`(?m)^` + name + `\{backend="` + cfg.Cache.Backend + `"\} (\d+)$`).FindStringSubmatch(metrics)
		if m == nil || m[1] == "0" {
			t.Errorf("/metrics after a miss and a hit: %s = %v, want at least 1", name, m)
		}
	}
	// Read your writes: the insert bumps the table version, so the cached result is not served.
	if r := call(t, "POST", base+"/v1/ingest/ev?wait=committed", js, `{"id":3,"user":"cy"}`); r.code != 200 {
		t.Fatalf("third row: %d %s", r.code, r.raw)
	}
	if q := call(t, "POST", base+"/v1/query", js, `{"sql":"SELECT count() AS c FROM ev"}`); !strings.Contains(q.raw, `"c":3`) {
		t.Fatalf("count after insert: %s", q.raw)
	}
	if q := call(t, "POST", base+"/v1/query", js, `{"sql":"SELECT id, user, n FROM ev ORDER BY id"}`); q.header.Get("X-Cache") != "MISS" || !strings.Contains(q.raw, `"user":"cy"`) {
		t.Fatalf("stale cached result after an insert: %s %s", q.header.Get("X-Cache"), q.raw)
	}

	// Validation: atomic refuses everything, partial keeps the valid row.
	bad := `[{"id":4,"user":"ok"},{"id":"x","user":"y","zz":1}]`
	if r := call(t, "POST", base+"/v1/ingest/ev", js, bad); r.code != 400 || r.body["code"] != "ingest.invalid_rows" {
		t.Fatalf("atomic: %d %s", r.code, r.raw)
	}
	if r := call(t, "POST", base+"/v1/ingest/ev?partial=true", js, bad); r.code != 202 || r.body["accepted"].(float64) != 1 || r.body["rejected"].(float64) != 1 {
		t.Fatalf("partial: %d %s", r.code, r.raw)
	}
	if r := call(t, "POST", base+"/v1/ingest/nope", js, `{"id":1}`); r.code != 404 {
		t.Fatalf("unknown table: %d %s", r.code, r.raw)
	}
	if r := call(t, "POST", base+"/v1/ingest/ev", "text/plain", `{"id":1}`); r.code != 415 {
		t.Fatalf("media type: %d %s", r.code, r.raw)
	}

	// Idempotency: a retry replays, a different body with the same key is 422.
	first := call(t, "POST", base+"/v1/ingest/ev", js, `{"id":10,"user":"k"}`, "Idempotency-Key", "key-1")
	again := call(t, "POST", base+"/v1/ingest/ev", js, `{"id":10,"user":"k"}`, "Idempotency-Key", "key-1")
	if first.code != 202 || again.code != 202 || again.header.Get("Idempotent-Replayed") != "true" || first.raw != again.raw {
		t.Fatalf("replay: %d %q / %d %q (%s)", first.code, first.raw, again.code, again.raw, again.header.Get("Idempotent-Replayed"))
	}
	if r := call(t, "POST", base+"/v1/ingest/ev", js, `{"id":11,"user":"k"}`, "Idempotency-Key", "key-1"); r.code != 422 {
		t.Fatalf("reused key: %d %s", r.code, r.raw)
	}

	// Tables.
	if r := call(t, "GET", base+"/v1/tables/ev", "", ""); r.code != 200 || !strings.Contains(r.raw, `"nullable":true`) {
		t.Fatalf("table: %d %s", r.code, r.raw)
	}
	if r := call(t, "GET", base+"/v1/tables", "", ""); r.code != 200 || !strings.Contains(r.raw, `"name":"ev"`) {
		t.Fatalf("tables: %d %s", r.code, r.raw)
	}

	// Dead letters: a row that passes validation but breaks a table constraint is isolated and
	// dead-lettered; after the constraint is dropped, replay delivers it.
	if r := opsCall(t, a, "POST", "/v1/ops/sql", `{"sql":"CREATE TABLE gone (id UInt64, CONSTRAINT small CHECK id < 10) ENGINE = MergeTree ORDER BY id"}`); r.code != 200 {
		t.Fatal(r.raw)
	}
	good := call(t, "POST", base+"/v1/ingest/gone?wait=committed", js, `{"id":1}`)
	poison := call(t, "POST", base+"/v1/ingest/gone?wait=committed", js, `{"id":70}`)
	if good.code != 200 || poison.code != 202 || poison.body["dead_lettered"] != true {
		t.Fatalf("good %d %s / poison %d %s", good.code, good.raw, poison.code, poison.raw)
	}
	if r := opsCall(t, a, "GET", "/v1/ops/dlq", ""); !strings.Contains(r.raw, `"table":"gone","count":1`) {
		t.Fatalf("dlq counts: %s", r.raw)
	}
	if r := opsCall(t, a, "GET", "/v1/ops/dlq/gone", ""); r.code != 200 || !strings.Contains(r.raw, `"rows":[{"id":70}]`) {
		t.Fatalf("dlq list: %d %s", r.code, r.raw)
	}
	if r := opsCall(t, a, "POST", "/v1/ops/dlq/gone/replay?dry_run=true", ""); r.code != 200 || r.body["dry_run"] != true {
		t.Fatalf("dry run: %d %s", r.code, r.raw)
	}
	_ = opsCall(t, a, "POST", "/v1/ops/sql", `{"sql":"ALTER TABLE gone DROP CONSTRAINT small"}`)
	if r := opsCall(t, a, "POST", "/v1/ops/dlq/gone/replay", ""); r.code != 200 || r.body["replayed"].(float64) != 1 {
		t.Fatalf("replay: %d %s", r.code, r.raw)
	}
	poll.Until(t, 30*time.Second, "the replayed row inserted", func() bool {
		return strings.Contains(call(t, "POST", base+"/v1/query", js, `{"sql":"SELECT count() AS c FROM gone"}`).raw, `"c":2`)
	})
	if r := opsCall(t, a, "GET", "/v1/ops/dlq", ""); strings.Contains(r.raw, `"table":"gone"`) {
		t.Fatalf("dlq not empty after replay: %s", r.raw)
	}
	if r := opsCall(t, a, "DELETE", "/v1/ops/dlq/gone", ""); r.code != 200 {
		t.Fatalf("purge: %d %s", r.code, r.raw)
	}
}
