package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestRoutesWrongMethodAndUnknownPath: a route's path with a method it does not accept is
// 405 http.method_not_allowed with Allow, before authentication; an unknown path is 404.
func TestRoutesWrongMethodAndUnknownPath(t *testing.T) {
	f := newFixture(t, options{})
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodGet, "/v1/ingest/events", "POST"},
		{http.MethodGet, "/v1/query", "POST"},
		{http.MethodPut, "/v1/ops/dlq/events", "DELETE, GET, HEAD"},
		{http.MethodDelete, "/v1/pipes/by_user", "GET, HEAD, POST"},
	} {
		r := f.do(t, call{method: c.method, path: c.path})
		wantError(t, r, http.StatusMethodNotAllowed, "http.method_not_allowed")
		if r.header.Get("Allow") != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, r.header.Get("Allow"), c.allow)
		}
	}
	wantError(t, f.do(t, call{method: http.MethodGet, path: "/v1/nope", key: f.all}), http.StatusNotFound, "not_found")
}

// TestRoutesAuthentication: every route needs a key of the right scope, and table-restricted
// keys are held to their tables; the operator key is refused on data routes and needs ?tenant=
// on tenant ops routes; only it may reload the settings.
func TestRoutesAuthentication(t *testing.T) {
	f := newFixture(t, options{pipe: "SELECT count() AS n FROM events"})
	for _, c := range []struct {
		name   string
		c      call
		status int
		code   string
	}{
		{"no key", call{method: http.MethodPost, path: "/v1/ingest/events", body: row1}, 401, "auth.missing_key"},
		{"bad key", call{method: http.MethodGet, path: "/v1/tables", key: "wh_000000000000_00"}, 401, "auth.invalid_key"},
		{"query key ingests", call{method: http.MethodPost, path: "/v1/ingest/events", key: f.queryOnly, body: row1}, 403, "auth.missing_scope"},
		{"query key on DLQ", call{method: http.MethodGet, path: "/v1/ops/dlq", key: f.queryOnly}, 403, "auth.missing_scope"},
		{"query key streams", call{method: http.MethodGet, path: "/v1/stream/events", key: f.queryOnly}, 403, "auth.missing_scope"},
		{"restricted key, other table", call{method: http.MethodPost, path: "/v1/ingest/pages", key: f.events, body: row1}, 403, "auth.table_not_allowed"},
		{"restricted key, other table's columns", call{method: http.MethodGet, path: "/v1/tables/pages", key: f.events}, 403, "auth.table_not_allowed"},
		{"restricted key, other table's DLQ", call{method: http.MethodDelete, path: "/v1/ops/dlq/pages", key: f.events}, 403, "auth.table_not_allowed"},
		{"operator on data route", call{method: http.MethodGet, path: "/v1/tables", key: f.operator}, 403, "auth.operator_key_not_allowed"},
		{"operator without tenant", call{method: http.MethodGet, path: "/v1/ops/dlq", key: f.operator}, 400, "auth.tenant_required"},
		{"operator, unknown tenant", call{method: http.MethodGet, path: "/v1/ops/dlq?tenant=nobody", key: f.operator}, 400, "auth.unknown_tenant"},
		{"tenant key reloads settings", call{method: http.MethodPost, path: "/v1/ops/settings/reload", key: f.all}, 403, "auth.operator_only"},
	} {
		t.Run(c.name, func(t *testing.T) { wantError(t, f.do(t, c.c), c.status, c.code) })
	}
	var reload struct {
		Tenants int `json:"tenants"`
		Keys    int `json:"keys"`
	}
	wantJSON(t, f.do(t, call{method: http.MethodPost, path: "/v1/ops/settings/reload", key: f.operator}), http.StatusOK, &reload)
	if reload.Tenants != 2 || reload.Keys != 4 {
		t.Fatalf("reload: %+v", reload)
	}
	var dlq struct{ Tables []any }
	wantJSON(t, f.do(t, call{method: http.MethodGet, path: "/v1/ops/dlq?tenant=acme", key: f.operator}), http.StatusOK, &dlq)
}

// TestRoutesRequestRateLimit: over the tenant's requests-per-second limit every route answers
// 429 limits.requests with Retry-After and RateLimit-* headers; passing requests carry the
// RateLimit-* headers too.
func TestRoutesRequestRateLimit(t *testing.T) {
	f := newFixture(t, options{limits: "{requests_per_second: 0.001, burst: 1}"})
	r := f.do(t, call{method: http.MethodGet, path: "/v1/tables", key: f.all})
	wantJSON(t, r, http.StatusOK, nil)
	if r.header.Get("RateLimit-Limit") != "1" {
		t.Fatalf("RateLimit-Limit %q", r.header.Get("RateLimit-Limit"))
	}
	r = f.do(t, call{method: http.MethodPost, path: "/v1/ingest/events", key: f.all, body: row1})
	wantError(t, r, http.StatusTooManyRequests, "limits.requests")
	if r.header.Get("Retry-After") == "" || r.header.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("headers %v", r.header)
	}
	// Another tenant is not slowed.
	wantJSON(t, f.do(t, call{method: http.MethodGet, path: "/v1/tables", key: f.other}), http.StatusOK, nil)
}

// TestRoutesStream: the stream route is served for a stream key (a malformed resume id is its
// 400 stream.invalid_id).
func TestRoutesStream(t *testing.T) {
	f := newFixture(t, options{})
	wantError(t, f.do(t, call{method: http.MethodGet, path: "/v1/stream/events?since=garbage", key: f.all}), http.StatusBadRequest, "stream.invalid_id")
}

// TestTenantUnknown: a principal whose tenant has no store target (here the anonymous tenant of
// a process that maps none; on ops routes the operator naming it, since the anonymous principal
// never reaches them) is 403 tenant.unknown on every tenant route.
func TestTenantUnknown(t *testing.T) {
	f := newFixture(t, options{anonymous: true})
	for _, c := range []call{
		{method: http.MethodPost, path: "/v1/ingest/events", body: row1},
		{method: http.MethodPost, path: "/v1/query", body: `{"sql":"SELECT 1"}`},
		{method: http.MethodGet, path: "/v1/tables"},
		{method: http.MethodGet, path: "/v1/tables/events"},
		{method: http.MethodPost, path: "/v1/ops/sql?tenant=default", key: f.operator, body: `{"sql":"SELECT 1"}`},
		{method: http.MethodPost, path: "/v1/ops/dlq/events/replay?tenant=default", key: f.operator},
	} {
		wantError(t, f.do(t, c), http.StatusForbidden, "tenant.unknown")
	}
}

// TestTables: the listing shows the tenant's tables (a restricted key only its own), the columns
// route what WaveHouse makes of each column; another tenant sees its own database only.
func TestTables(t *testing.T) {
	f := newFixture(t, options{})
	exec(t, f.store, "CREATE TABLE "+f.db+".pages (url String) ENGINE = MergeTree ORDER BY url")
	type listing struct {
		Database string
		Tables   []struct{ Name, Engine string }
	}
	names := func(l listing) string {
		var s []string
		for _, t := range l.Tables {
			s = append(s, t.Name+":"+t.Engine)
		}
		return strings.Join(s, ",")
	}
	var l listing
	wantJSON(t, f.do(t, call{method: http.MethodGet, path: "/v1/tables", key: f.all}), http.StatusOK, &l)
	if l.Database != f.db || names(l) != "events:MergeTree,pages:MergeTree" {
		t.Fatalf("all: %+v", l)
	}
	wantJSON(t, f.do(t, call{method: http.MethodGet, path: "/v1/tables", key: f.events}), http.StatusOK, &l)
	if names(l) != "events:MergeTree" {
		t.Fatalf("restricted: %+v", l)
	}
	exec(t, f.store, "DROP TABLE "+f.otherDB+".events")
	wantJSON(t, f.do(t, call{method: http.MethodGet, path: "/v1/tables", key: f.other}), http.StatusOK, &l)
	if l.Database != f.otherDB || len(l.Tables) != 0 {
		t.Fatalf("globex: %+v", l)
	}

	var tbl struct {
		Name, Database string
		Columns        []columnView
	}
	wantJSON(t, f.do(t, call{method: http.MethodGet, path: "/v1/tables/events", key: f.queryOnly}), http.StatusOK, &tbl)
	want := []columnView{
		{Name: "ts", Type: "DateTime", Writable: true, Required: true, Supported: true},
		{Name: "user", Type: "String", Writable: true, Required: true, Supported: true},
		{Name: "n", Type: "UInt8", Default: "DEFAULT", Expression: "0", Writable: true, Supported: true},
		{Name: "note", Type: "Nullable(String)", Writable: true, Nullable: true, Supported: true},
	}
	if tbl.Name != "events" || tbl.Database != f.db || len(tbl.Columns) != len(want) {
		t.Fatalf("%+v", tbl)
	}
	for i := range want {
		if tbl.Columns[i] != want[i] {
			t.Errorf("column %d: %+v, want %+v", i, tbl.Columns[i], want[i])
		}
	}
	wantError(t, f.do(t, call{method: http.MethodGet, path: "/v1/tables/nope", key: f.all}), http.StatusNotFound, "table.unknown")
	exec(t, f.store, "DROP DATABASE "+f.otherDB)
	wantError(t, f.do(t, call{method: http.MethodGet, path: "/v1/tables/events", key: f.other}), http.StatusNotFound, "database.unknown")
}
