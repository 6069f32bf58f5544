package tenants_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// recentPipe is the pipe both tenants of the isolation test define under the same name.
const recentPipe = "-- The ids of the events table.\n-- @tables events\nSELECT id FROM events ORDER BY id\n"

// eventsDDL, poisonDDL and otherDDL are the tables both tenants create under the same names.
const (
	eventsDDL = "CREATE TABLE events (id String, n UInt64) ENGINE = MergeTree() ORDER BY id"
	poisonDDL = "CREATE TABLE poison (id String, p UInt8, CONSTRAINT small CHECK p < 10) ENGINE = MergeTree() ORDER BY id"
	otherDDL  = "CREATE TABLE other (id String) ENGINE = MergeTree() ORDER BY id"
)

// TestIsolation runs two tenants, a and b, with identical table, pipe and Idempotency-Key
// names on one gateway, and checks that neither's keys reach the other's data on any route:
// the whole route × credential matrix of docs/tenants.md, then ingest, query (and its cache),
// pipes, streams, the dead-letter queue, table listings and idempotency records; and the same
// for each tenant's JWTs (docs/jwt.md), CORS and a JWKS rotation.
func TestIsolation(t *testing.T) {
	t.Parallel()
	a, b := tenantKeys(t, "a", "tenant_a"), tenantKeys(t, "b", "tenant_b")
	for _, tn := range []*tenant{a, b} {
		tn.Pipes = map[string]string{"recent": recentPipe}
	}
	ja, jb := withHS256(t, a), withJWKS(t, b)
	g := startGateway(t, gatewayOptions{}, a, b)
	for _, tn := range []*tenant{a, b} {
		admin := tn.key(t, "admin").Token
		for _, ddl := range []string{eventsDDL, poisonDDL, otherDDL} {
			g.sql(t, admin, "", ddl)
		}
	}

	t.Run("matrix", func(t *testing.T) {
		checkMatrix(t, g, append(matrixCallers(g, a, b), jwtCallers(t, ja, jb)...))
		// The refusals were audited (and TestMain greps the same output for the credentials).
		mustContain(t, "the gateway's output after the matrix", g.proc.Output(),
			`"audit: authentication failed"`, `"audit: access denied"`, `"audit: ops request"`)
	})
	t.Run("ingest and query", func(t *testing.T) { checkIngestQuery(t, g, a, b) })
	t.Run("jwt", func(t *testing.T) { checkJWTData(t, g, ja, jb) })
	t.Run("cors", func(t *testing.T) { checkCORS(t, g, ja, jb) })
	t.Run("jwks rotation", func(t *testing.T) { checkJWKSRotation(t, g, jb) })
	t.Run("stream", func(t *testing.T) { checkStreams(t, g, a, b) })
	t.Run("dead letters", func(t *testing.T) { checkDeadLetters(t, g, a, b) })
	t.Run("idempotency keys", func(t *testing.T) { checkIdempotency(t, g, a, b) })
	t.Run("tables", func(t *testing.T) { checkTables(t, g, a, b) })
}

// checkIngestQuery ingests a row per tenant and reads each tenant's events with the same SQL
// text twice (the second answer from the cache), through the ClickHouse interface, through the
// same pipe, and across databases.
func checkIngestQuery(t *testing.T, g *gateway, a, b *tenant) {
	for _, tn := range []*tenant{a, b} {
		r := g.ingest(t, tn.key(t, "ingest").Token, "events", "wait=committed", fmt.Sprintf(`{"id":"row-of-%s","n":1}`, tn.Name))
		if r.Status != http.StatusOK {
			t.Fatalf("ingest as tenant %s with wait=committed: %s, want 200", tn.Name, r)
		}
	}
	const sql = "SELECT id FROM events WHERE id LIKE 'row-of-%' ORDER BY id"
	for _, tn := range []*tenant{a, b} {
		token := tn.key(t, "query").Token
		// Until the answer comes from the cache (a late insert of the matrix may bump a version).
		// b's first query has the same SQL text as a's cached one: if the cache key did not hold
		// the tenant, b would get a HIT with a's rows.
		for i := 0; ; i++ {
			r := g.query(t, token, sql)
			if r.Status != http.StatusOK {
				t.Fatalf("query %d as tenant %s: %s", i, tn.Name, r)
			}
			xc := r.Header.Get("X-Cache")
			if got := idsOf(t, r.Body); !slices.Equal(got, []string{"row-of-" + tn.Name}) {
				t.Fatalf("query %d as tenant %s (X-Cache %s): ids %q, want only its own row", i, tn.Name, xc, got)
			}
			if i == 0 && xc != "MISS" {
				t.Errorf("first query as tenant %s: X-Cache %q, want MISS", tn.Name, xc)
			}
			if xc == "HIT" {
				break
			}
			if i == 5 {
				t.Fatalf("query as tenant %s: no cache HIT after %d identical queries", tn.Name, i+1)
			}
		}
		// The same SQL through the ClickHouse interface, the key as the Basic password.
		tok, cred := chCredential(token, true)
		ch := g.do(t, http.MethodGet, "/?query="+url.QueryEscape(sql+" FORMAT JSONEachRow"), tok, nil, cred...)
		if got := idsOf(t, ch.Body); ch.Status != http.StatusOK || !slices.Equal(got, []string{"row-of-" + tn.Name}) {
			t.Fatalf("GET / as tenant %s: %s, want only its own row", tn.Name, ch)
		}
		p := g.do(t, http.MethodGet, "/v1/pipes/recent?format=ndjson", token, nil)
		if p.Status != http.StatusOK {
			t.Fatalf("pipe recent as tenant %s: %s", tn.Name, p)
		}
		other := map[string]string{"a": "b", "b": "a"}[tn.Name]
		if ids := idsOf(t, p.Body); !slices.Contains(ids, "row-of-"+tn.Name) || slices.Contains(ids, "row-of-"+other) {
			t.Errorf("pipe recent as tenant %s: ids %q, want its own row and not tenant %s's", tn.Name, ids, other)
		}
	}
	// A query naming the other tenant's database must not read it.
	for _, stmt := range []string{"SELECT id FROM tenant_b.events", "SELECT id FROM merge('tenant_b', '.*')"} {
		r := g.query(t, a.key(t, "query").Token, stmt)
		if r.OK() || strings.Contains(string(r.Body), "row-of-b") {
			t.Errorf("tenant a's query key ran %q: %s, want a refusal", stmt, r)
		}
	}
	// Nor may a's admin key reach b's database through operator SQL.
	for _, stmt := range []string{
		"SELECT id FROM tenant_b.events",
		"DROP TABLE tenant_b.events",
		"CREATE TABLE spy (id String) ENGINE = Merge('tenant_b', '.*')",
		"CREATE VIEW spy AS SELECT id FROM tenant_b.events",
	} {
		body, _ := json.Marshal(map[string]string{"sql": stmt})
		r := g.do(t, http.MethodPost, "/v1/ops/sql", a.key(t, "admin").Token, body)
		if r.Status != http.StatusForbidden || r.Code() != "sql.outside_tenant" {
			t.Errorf("tenant a's admin key ran %q: %s, want 403 sql.outside_tenant", stmt, r)
		}
	}
	if r := g.query(t, b.key(t, "query").Token, "SELECT id FROM events"); !r.OK() || !strings.Contains(string(r.Body), "row-of-b") {
		t.Errorf("tenant b's events after a's attempts: %s", r)
	}
}

// checkStreams opens each tenant's stream of events (with history), ingests into both, and
// requires each stream to carry its own tenant's row and never the other's.
func checkStreams(t *testing.T, g *gateway, a, b *tenant) {
	streams := map[string]*stream{}
	for _, tn := range []*tenant{a, b} {
		s := g.openStream(t, tn.key(t, "stream").Token, "events")
		if s.Status != http.StatusOK {
			t.Fatalf("stream events as tenant %s: status %d", tn.Name, s.Status)
		}
		streams[tn.Name] = s
	}
	// a first, then b: once b's row reached b's stream, a's (accepted earlier) would have too.
	for _, tn := range []*tenant{a, b} {
		if r := g.ingest(t, tn.key(t, "ingest").Token, "events", "", fmt.Sprintf(`{"id":"live-of-%s","n":2}`, tn.Name)); !r.OK() {
			t.Fatalf("ingest as tenant %s: %s", tn.Name, r)
		}
	}
	for _, tn := range []*tenant{b, a} {
		s := streams[tn.Name]
		s.waitFor(t, "tenant "+tn.Name+"'s row on its stream", "live-of-"+tn.Name)
		other := map[string]string{"a": "b", "b": "a"}[tn.Name]
		if txt := s.text(); strings.Contains(txt, "-of-"+other) {
			t.Errorf("tenant %s's stream carried tenant %s's rows:\n%s", tn.Name, other, txt)
		}
	}
}

// checkDeadLetters dead-letters a row of tenant a and checks that only a's admin key and the
// operator key with ?tenant=a see it, and that b's admin key cannot purge it.
func checkDeadLetters(t *testing.T, g *gateway, a, b *tenant) {
	r := g.ingest(t, a.key(t, "ingest").Token, "poison", "wait=committed", `{"id":"poison-of-a","p":42}`)
	if r.Status != http.StatusAccepted || !strings.Contains(string(r.Body), `"dead_lettered":true`) {
		t.Fatalf("poison row as tenant a: %s, want 202 dead_lettered", r)
	}
	aAdmin, bAdmin := a.key(t, "admin").Token, b.key(t, "admin").Token
	sees := func(who, token, path string) bool {
		t.Helper()
		r := g.do(t, http.MethodGet, path, token, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s as %s: %s", path, who, r)
		}
		return strings.Contains(string(r.Body), "poison")
	}
	for _, c := range []struct {
		who, token, tenantParam string
		want                    bool
	}{
		{"tenant a's admin key", aAdmin, "", true},
		{"the operator key for a", g.Operator, "?tenant=a", true},
		{"tenant b's admin key", bAdmin, "", false},
		{"the operator key for b", g.Operator, "?tenant=b", false},
	} {
		for _, path := range []string{"/v1/ops/dlq", "/v1/ops/dlq/poison"} {
			if got := sees(c.who, c.token, path+c.tenantParam); got != c.want {
				t.Errorf("GET %s as %s shows tenant a's dead letter: %t, want %t", path, c.who, got, c.want)
			}
		}
	}
	if r := g.do(t, http.MethodPost, "/v1/ops/dlq/poison/replay?force=true", bAdmin, nil); !r.OK() || strings.Contains(string(r.Body), `"replayed":1`) {
		t.Errorf("replay of poison as tenant b: %s, want 2xx replaying nothing", r)
	}
	if r := g.do(t, http.MethodDelete, "/v1/ops/dlq/poison", bAdmin, nil); !r.OK() {
		t.Errorf("purge of poison as tenant b: %s, want 2xx", r)
	}
	if !sees("tenant a's admin key", aAdmin, "/v1/ops/dlq/poison") {
		t.Errorf("tenant b's purge or replay removed tenant a's dead letter")
	}
}

// checkIdempotency sends the same Idempotency-Key value as a and as b with different bodies:
// both are processed (no 422 key_reused), and each replays only its own.
func checkIdempotency(t *testing.T, g *gateway, a, b *tenant) {
	const key = "shared-idempotency-key"
	for _, tn := range []*tenant{a, b} {
		row := fmt.Sprintf(`{"id":"idem-of-%s","n":3}`, tn.Name)
		first := g.ingest(t, tn.key(t, "ingest").Token, "events", "wait=committed", row, "Idempotency-Key", key)
		if first.Status != http.StatusOK || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first ingest with Idempotency-Key %q as tenant %s: %s (replayed %q), want 200 not replayed",
				key, tn.Name, first, first.Header.Get("Idempotent-Replayed"))
		}
	}
	for _, tn := range []*tenant{a, b} {
		row := fmt.Sprintf(`{"id":"idem-of-%s","n":3}`, tn.Name)
		again := g.ingest(t, tn.key(t, "ingest").Token, "events", "wait=committed", row, "Idempotency-Key", key)
		if !again.OK() || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("retry with Idempotency-Key %q as tenant %s: %s (replayed %q), want its own recorded answer replayed",
				key, tn.Name, again, again.Header.Get("Idempotent-Replayed"))
		}
		ids := g.ids(t, tn.key(t, "query").Token, "SELECT id FROM events WHERE id LIKE 'idem-of-%'")
		if !slices.Equal(ids, []string{"idem-of-" + tn.Name}) {
			t.Errorf("tenant %s's idempotent rows: %q, want its own row once", tn.Name, ids)
		}
	}
}

// checkTables creates a table in a only and checks b's listing and lookup do not see it, and
// that the restricted key's listing shows only the table it may touch.
func checkTables(t *testing.T, g *gateway, a, b *tenant) {
	g.sql(t, a.key(t, "admin").Token, "", "CREATE TABLE only_a (id String) ENGINE = MergeTree() ORDER BY id")
	list := func(k *apiKey) string {
		t.Helper()
		r := g.do(t, http.MethodGet, "/v1/tables", k.Token, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("GET /v1/tables as %s: %s", k, r)
		}
		return string(r.Body)
	}
	if s := list(a.key(t, "query")); !strings.Contains(s, `"only_a"`) {
		t.Errorf("tenant a's listing lacks its table only_a: %s", s)
	}
	if s := list(b.key(t, "query")); strings.Contains(s, `"only_a"`) || !strings.Contains(s, `"events"`) {
		t.Errorf("tenant b's listing %s: want its own tables and not tenant a's only_a", s)
	}
	if r := g.do(t, http.MethodGet, "/v1/tables/only_a", b.key(t, "query").Token, nil); r.Status != http.StatusNotFound {
		t.Errorf("GET /v1/tables/only_a as tenant b: %s, want 404", r)
	}
	if s := list(a.key(t, "restricted")); !strings.Contains(s, `"other"`) || strings.Contains(s, `"events"`) {
		t.Errorf("listing as %s: %s, want only the table other", a.key(t, "restricted"), s)
	}
}
