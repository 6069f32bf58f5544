package query_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
)

// attacks are values that would change the statement if they were spliced into it.
var attacks = []string{
	"x' OR 1=1 --",
	"x' OR '1'='1",
	"ann'; DROP TABLE events; --",
	`ann\' OR 1=1 --`,
	"ann' UNION ALL SELECT id, user, big FROM events --",
	"ann/*",
	"{user:String}",
}

func testInjection(t *testing.T, e *env) {
	for _, v := range attacks {
		r := e.query(t, map[string]any{
			"sql":    "SELECT count() AS c FROM events WHERE user = {u:String}",
			"params": map[string]any{"u": v},
		})
		if r.code != 200 || r.data(t)[0]["c"] != json.Number("0") {
			t.Errorf("params %q: %d %s", v, r.code, r.body)
		}
		r = e.do(t, http.MethodGet, "/v1/pipes/by_user?user="+url.QueryEscape(v), "")
		if r.code != 200 || len(r.data(t)) != 0 {
			t.Errorf("pipe query string %q: %d %s", v, r.code, r.body)
		}
		b, _ := json.Marshal(map[string]any{"params": map[string]any{"user": v}})
		r = e.do(t, http.MethodPost, "/v1/pipes/by_user", string(b))
		if r.code != 200 || len(r.data(t)) != 0 {
			t.Errorf("pipe body %q: %d %s", v, r.code, r.body)
		}
	}
	// A value holding a quote is matched exactly, as data.
	r := e.do(t, http.MethodGet, "/v1/pipes/by_user?user="+url.QueryEscape("o'brien"), "")
	if rows := r.data(t); r.code != 200 || len(rows) != 1 || rows[0]["user"] != "o'brien" {
		t.Fatalf("o'brien: %d %s", r.code, r.body)
	}
	// A number parameter holding SQL never reaches the store.
	before := e.calls.n.Load()
	r = e.do(t, http.MethodGet, "/v1/pipes/by_user?user=ann&min_id="+url.QueryEscape("0 OR 1=1"), "")
	if r.code != 400 || r.json(t)["code"] != "pipe.invalid_param" || e.calls.n.Load() != before {
		t.Fatalf("SQL in a UInt64 parameter: %d %s", r.code, r.body)
	}
	if got := e.count(t); got != "3" {
		t.Fatalf("events has %s rows after the attempts, want 3", got)
	}
}

// hiddenWrites are statements that write while looking like reads to a naive check.
var hiddenWrites = []string{
	"/* SELECT */ DROP TABLE events",
	"-- SELECT 1\nINSERT INTO events SELECT * FROM events",
	"#!SELECT\nTRUNCATE TABLE events",
	"WITH 1 AS x INSERT INTO events SELECT * FROM events",
	"WITH 1 AS x ALTER TABLE events DELETE WHERE 1",
	"WITH x AS (SELECT 1) ALTER TABLE events DELETE WHERE 1",
	"SELECT 1; DROP TABLE events",
	"SELECT 1 /* ; */ ; ALTER TABLE events DELETE WHERE 1",
	"SELECT ';' AS s; DROP TABLE events",
	"EXPLAIN INSERT INTO events SELECT * FROM events",
	"SELECT * FROM events INTO OUTFILE '/tmp/wavehouse-injection'",
	"  \n\t/* a */ -- b\n  OPTIMIZE TABLE events FINAL",
	"SET readonly = 0",
	"SYSTEM STOP MERGES",
	"KILL QUERY WHERE 1",
	"(DROP TABLE events)",
}

func testHiddenWrites(t *testing.T, e *env) {
	before := e.calls.n.Load()
	for _, sql := range hiddenWrites {
		r := e.query(t, map[string]any{"sql": sql})
		if r.code != 400 || r.json(t)["code"] != "query.rejected" {
			t.Errorf("%q: %d %s", sql, r.code, r.body)
		}
	}
	if n := e.calls.n.Load() - before; n != 0 {
		t.Fatalf("%d hidden writes reached the store", n)
	}
	// The server's read-only setting is the second line: a read that tries to lift it fails.
	r := e.query(t, map[string]any{"sql": "SELECT count() AS c FROM events SETTINGS readonly = 0"})
	if r.code == 200 {
		t.Fatalf("a query lifted readonly: %s", r.body)
	}
	if got := e.count(t); got != "3" {
		t.Fatalf("events has %s rows, want 3", got)
	}
}
