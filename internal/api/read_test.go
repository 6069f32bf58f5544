package api

import (
	"net/http"
	"testing"
)

// queryBody is the JSON answer of a query.
type queryBody struct {
	Data []map[string]any `json:"data"`
	Rows int              `json:"rows"`
}

// TestQueryRoute: a tenant key's query reads its own database's tables and no other; a write
// statement and an unknown table get the query codes; the anonymous tenant is not confined.
func TestQueryRoute(t *testing.T) {
	f := newFixture(t, options{})
	exec(t, f.store, "INSERT INTO "+f.db+".events (ts, user) VALUES (0, 'a'), (1, 'b')")
	q := func(key, sql string) response {
		return f.do(t, call{method: http.MethodPost, path: "/v1/query", key: key, body: `{"sql": "` + sql + `"}`})
	}
	var got queryBody
	wantJSON(t, q(f.queryOnly, "SELECT count() AS n FROM events"), http.StatusOK, &got)
	if d := toJSON(t, got.Data); d != `[{"n":2}]` {
		t.Fatalf("%s", d)
	}
	wantError(t, q(f.queryOnly, "SELECT name FROM system.tables"), http.StatusForbidden, "auth.table_not_allowed")
	wantError(t, q(f.queryOnly, "SELECT * FROM "+f.otherDB+".events"), http.StatusForbidden, "auth.table_not_allowed")
	wantError(t, q(f.events, "SELECT * FROM pages"), http.StatusForbidden, "auth.table_not_allowed")
	wantError(t, q(f.queryOnly, "INSERT INTO events (user) VALUES ('x')"), http.StatusBadRequest, "query.rejected")
	wantError(t, q(f.queryOnly, "SELECT * FROM nope"), http.StatusNotFound, "query.unknown_table")
	wantError(t, f.do(t, call{method: http.MethodPost, path: "/v1/query", key: f.queryOnly, body: `{"sql": 1}`}), http.StatusBadRequest, "query.invalid_request")

	a := newFixture(t, options{anonymous: true, anonymousDB: true})
	wantJSON(t, a.do(t, call{method: http.MethodPost, path: "/v1/query", body: `{"sql": "SELECT name FROM system.tables WHERE database = '` + a.db + `'"}`}), http.StatusOK, &got)
	if got.Rows != 1 || got.Data[0]["name"] != "events" {
		t.Fatalf("anonymous: %+v", got)
	}
}

// TestPipeRoute: pipes are listed and run for a query key; a key restricted to tables is held to
// the tables the pipe reads; an unknown pipe is 404 pipe.not_found.
func TestPipeRoute(t *testing.T) {
	f := newFixture(t, options{pipe: "-- @param user String required\n-- @tables events\nSELECT count() AS n FROM events WHERE user = {user:String}"})
	exec(t, f.store, "INSERT INTO "+f.db+".events (ts, user) VALUES (0, 'a'), (1, 'a'), (2, 'b')")
	var list struct{ Pipes []struct{ Name string } }
	wantJSON(t, f.do(t, call{method: http.MethodGet, path: "/v1/pipes", key: f.queryOnly}), http.StatusOK, &list)
	if len(list.Pipes) != 1 || list.Pipes[0].Name != "by_user" {
		t.Fatalf("%+v", list)
	}
	var got queryBody
	wantJSON(t, f.do(t, call{method: http.MethodGet, path: "/v1/pipes/by_user?user=a", key: f.queryOnly}), http.StatusOK, &got)
	if d := toJSON(t, got.Data); d != `[{"n":2}]` {
		t.Fatalf("GET: %s", d)
	}
	wantJSON(t, f.do(t, call{method: http.MethodPost, path: "/v1/pipes/by_user", key: f.queryOnly, body: `{"params": {"user": "b"}}`}), http.StatusOK, &got)
	if d := toJSON(t, got.Data); d != `[{"n":1}]` {
		t.Fatalf("POST: %s", d)
	}
	wantJSON(t, f.do(t, call{method: http.MethodGet, path: "/v1/pipes/by_user?user=a", key: f.events}), http.StatusOK, nil)
	wantError(t, f.do(t, call{method: http.MethodGet, path: "/v1/pipes/nope", key: f.queryOnly}), http.StatusNotFound, "pipe.not_found")
	wantError(t, f.do(t, call{method: http.MethodGet, path: "/v1/pipes/by_user", key: f.queryOnly}), http.StatusBadRequest, "pipe.missing_param")

	g := newFixture(t, options{pipe: "SELECT count() AS n FROM pages"})
	wantError(t, g.do(t, call{method: http.MethodGet, path: "/v1/pipes/by_user", key: g.events}), http.StatusForbidden, "auth.table_not_allowed")
}

// TestReadRoutesConcurrencyLimit: while the tenant runs max_concurrent_queries queries, the
// query and pipe routes answer 429 limits.queries with Retry-After; once one ends they run.
func TestReadRoutesConcurrencyLimit(t *testing.T) {
	f := newFixture(t, options{limits: "{max_concurrent_queries: 1}", pipe: "SELECT 1 AS one"})
	release, d := f.limiter.AcquireQuery(t.Context(), "acme")
	if !d.Allowed {
		t.Fatal("the first slot was refused")
	}
	for _, c := range []call{
		{method: http.MethodPost, path: "/v1/query", key: f.queryOnly, body: `{"sql": "SELECT 1"}`},
		{method: http.MethodGet, path: "/v1/pipes/by_user", key: f.queryOnly},
	} {
		r := f.do(t, c)
		wantError(t, r, http.StatusTooManyRequests, "limits.queries")
		if r.header.Get("Retry-After") == "" {
			t.Fatalf("%s: no Retry-After", c.path)
		}
	}
	release()
	wantJSON(t, f.do(t, call{method: http.MethodPost, path: "/v1/query", key: f.queryOnly, body: `{"sql": "SELECT 1"}`}), http.StatusOK, nil)
}
