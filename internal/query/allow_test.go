package query

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// serve runs req through Serve and decodes the answer.
func (f *fixture) serve(t *testing.T, req Request) result {
	t.Helper()
	rec := httptest.NewRecorder()
	f.svc.Serve(rec, t.Context(), f.target.Tenant, f.target, req)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return result{cache: rec.Header().Get("X-Cache"), code: rec.Code, body: out}
}

func only(names ...string) func(string) bool {
	return func(table string) bool {
		for _, n := range names {
			if n == table {
				return true
			}
		}
		return false
	}
}

// wantRefused asserts a 403 auth.table_not_allowed whose message contains each of want.
func wantRefused(t *testing.T, r result, want ...string) {
	t.Helper()
	msg, _ := r.body["error"].(string)
	if r.code != http.StatusForbidden || r.body["code"] != "auth.table_not_allowed" || r.cache != "" {
		t.Fatalf("want 403 auth.table_not_allowed without X-Cache, got %d %q %v", r.code, r.cache, r.body)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q does not mention %q", msg, w)
		}
	}
	if _, leaked := r.body["data"]; leaked {
		t.Errorf("a refused answer carries data: %v", r.body)
	}
}

func TestAllowTableLetsAllowedTablesThrough(t *testing.T) {
	f := newFixture(t, nil)
	for _, sql := range []string{
		"SELECT count() AS c FROM events",
		"SELECT count() AS c FROM " + f.target.Database + ".events", // the tenant's own database, spelt out
		"SELECT 1 AS c", // reads no table
	} {
		if r := f.serve(t, Request{SQL: sql, Format: FormatJSON, AllowTable: only("events")}); r.code != 200 {
			t.Errorf("%s: %d %v", sql, r.code, r.body)
		}
	}
}

func TestAllowTableRefusesOtherTablesBeforeRunning(t *testing.T) {
	f := newFixture(t, nil)
	for _, sql := range []string{
		"SELECT count() FROM events",
		"SELECT * FROM visits AS v JOIN events AS e ON v.id = e.id",
		"SELECT id FROM visits WHERE id IN (SELECT id FROM events)",
	} {
		wantRefused(t, f.serve(t, Request{SQL: sql, Format: FormatJSON, AllowTable: only("visits")}), `"events"`)
	}
	if n := f.svc.Executions(); n != 0 {
		t.Fatalf("refused queries reached the store %d times", n)
	}
}

func TestAllowTableRefusesACachedResult(t *testing.T) {
	f := newFixture(t, nil)
	req := Request{SQL: "SELECT count() AS c FROM events", Format: FormatJSON}
	if r := f.serve(t, req); r.cache != "MISS" {
		t.Fatalf("fill: %+v", r)
	}
	if r := f.serve(t, req); r.cache != "HIT" {
		t.Fatalf("unrestricted lookup: %+v", r)
	}
	req.AllowTable = only("visits")
	wantRefused(t, f.serve(t, req), `"events"`)
	// The same through the HTTP entry point, whose request bodies are memoised: the memo
	// must not carry the permission of an earlier unrestricted request.
	const body = `{"sql":"SELECT count() AS c FROM events"}`
	if r := f.query(t, body); r.cache != "HIT" {
		t.Fatalf("unrestricted HTTP lookup: %+v", r)
	}
	rec := httptest.NewRecorder()
	f.svc.ServeHTTPAllow(rec, httptest.NewRequest(http.MethodPost, "/v1/query", strings.NewReader(body)), f.target.Tenant, f.target, only("visits"))
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	wantRefused(t, result{cache: rec.Header().Get("X-Cache"), code: rec.Code, body: out}, `"events"`)
	rec = httptest.NewRecorder()
	f.svc.ServeHTTPAllow(rec, httptest.NewRequest(http.MethodPost, "/v1/query", strings.NewReader(body)), f.target.Tenant, f.target, only("events"))
	if rec.Code != 200 || rec.Header().Get("X-Cache") != "HIT" {
		t.Fatalf("allowed key: %d %q", rec.Code, rec.Header().Get("X-Cache"))
	}
}

func TestAllowTableRefusesWhatCannotBeNamed(t *testing.T) {
	f := newFixture(t, nil)
	all := func(string) bool { return true }
	for _, sql := range []string{
		"SELECT * FROM numbers(3)",
		"SELECT dictGet('d', 'x', toUInt64(1))",
		"SELECT * FROM {t:Identifier}",
	} {
		wantRefused(t, f.serve(t, Request{SQL: sql, Format: FormatJSON, AllowTable: all}), "could not be determined")
	}
	for _, sql := range []string{"SELECT * FROM system.tables", "SELECT * FROM other_db.events"} {
		wantRefused(t, f.serve(t, Request{SQL: sql, Format: FormatJSON, AllowTable: all}), "another database")
	}
	if n := f.svc.Executions(); n != 0 {
		t.Fatalf("refused queries reached the store %d times", n)
	}
	// The same texts run for an unrestricted principal.
	if r := f.serve(t, Request{SQL: "SELECT * FROM numbers(3)", Format: FormatJSON}); r.code != 200 {
		t.Fatalf("unrestricted: %d %v", r.code, r.body)
	}
}

func TestAllowTableChecksDeclaredTables(t *testing.T) {
	f := newFixture(t, nil)
	// A pipe declares the tables it reads; they are checked instead of the scan.
	req := Request{SQL: "SELECT count() AS c FROM events", Format: FormatJSON, Tables: []string{"events"}, AllowTable: only("visits")}
	wantRefused(t, f.serve(t, req), `"events"`)
	req.AllowTable = only("events")
	if r := f.serve(t, req); r.code != 200 {
		t.Fatalf("declared and allowed: %d %v", r.code, r.body)
	}
}
