package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// TestOpsSQL: the operator key runs any statement in the named tenant's database, and the schema
// it changes is seen by the next ingest; a tenant admin key is confined to its database; a key
// restricted to tables may not use it; bad requests and refused statements get their codes.
func TestOpsSQL(t *testing.T) {
	f := newFixture(t, options{})
	sql := func(key, path, stmt string) response {
		return f.do(t, call{method: http.MethodPost, path: path, key: key, body: fmt.Sprintf(`{"sql": %q}`, stmt)})
	}
	wantJSON(t, f.ingest(t, f.all, "events", row1), http.StatusAccepted, nil) // caches the schema
	wantJSON(t, sql(f.operator, "/v1/ops/sql?tenant=acme", "ALTER TABLE events ADD COLUMN extra UInt8"), http.StatusOK, nil)
	// The schema cache was dropped: a row that now must give the new column says so.
	e := wantError(t, f.ingest(t, f.all, "events", `{"ts":0,"user":"a","extra":"x"}`), http.StatusBadRequest, "ingest.invalid_rows")
	if !strings.Contains(string(e.Details), `"column":"extra"`) || strings.Contains(string(e.Details), "unknown_column") {
		t.Fatalf("after the ALTER: %s", e.Details)
	}
	wantJSON(t, sql(f.all, "/v1/ops/sql", "CREATE TABLE pages (url String) ENGINE = MergeTree ORDER BY url"), http.StatusOK, nil)
	wantError(t, sql(f.all, "/v1/ops/sql", "CREATE DATABASE elsewhere"), http.StatusForbidden, "sql.outside_tenant")
	wantError(t, sql(f.all, "/v1/ops/sql", "DROP TABLE "+f.otherDB+".events"), http.StatusForbidden, "sql.outside_tenant")
	wantError(t, sql(f.events, "/v1/ops/sql", "TRUNCATE TABLE events"), http.StatusForbidden, "auth.table_not_allowed")
	wantError(t, sql(f.all, "/v1/ops/sql", "SELECT * FROM nope"), http.StatusNotFound, "table.unknown")
	wantError(t, sql(f.all, "/v1/ops/sql", "SELEKT 1"), http.StatusForbidden, "sql.outside_tenant")
	wantError(t, sql(f.operator, "/v1/ops/sql?tenant=acme", "SELEKT 1"), http.StatusBadRequest, "store.rejected")
	for _, body := range []string{"", "{", `{"sql": "  "}`, `{"sql": 1}`} {
		wantError(t, f.do(t, call{method: http.MethodPost, path: "/v1/ops/sql", key: f.all, body: body}), http.StatusBadRequest, "sql.invalid_request")
	}
}

// TestOpsSQLInvalidatesCachedResults: operator SQL that changes a tenant's data bumps its cache
// versions, so the next identical query is a miss with the new rows, not the cached answer.
func TestOpsSQLInvalidatesCachedResults(t *testing.T) {
	f := newFixture(t, options{})
	q := func() response {
		return f.do(t, call{method: http.MethodPost, path: "/v1/query", key: f.all, body: `{"sql": "SELECT count() AS n FROM events"}`})
	}
	q()
	if r := q(); r.header.Get("X-Cache") != "HIT" {
		t.Fatalf("second query X-Cache %q, want HIT", r.header.Get("X-Cache"))
	}
	wantJSON(t, f.do(t, call{method: http.MethodPost, path: "/v1/ops/sql", key: f.all, body: `{"sql": "INSERT INTO events (ts, user) VALUES (0, 'a')"}`}), http.StatusOK, nil)
	var got queryBody
	r := q()
	wantJSON(t, r, http.StatusOK, &got)
	if r.header.Get("X-Cache") != "MISS" || toJSON(t, got.Data) != `[{"n":1}]` {
		t.Fatalf("after the insert: X-Cache %q, %s", r.header.Get("X-Cache"), toJSON(t, got.Data))
	}
}

type dlqList struct {
	Entries []struct {
		ID          uint64            `json:"id"`
		Position    string            `json:"position"`
		Code        string            `json:"code"`
		Error       string            `json:"error"`
		Attempts    int               `json:"attempts"`
		Traceparent string            `json:"traceparent"`
		Rows        []json.RawMessage `json:"rows"`
		DeadAt      time.Time         `json:"dead_at"`
	} `json:"entries"`
	NextAfter uint64 `json:"next_after"`
}

// TestDLQListAndPurge: dead-lettered records are counted per table, listed with their reason,
// traceparent and rows (as JSON objects by column), paged with next_after, and purged.
func TestDLQListAndPurge(t *testing.T) {
	f := newFixture(t, options{})
	for i := range 3 {
		wantJSON(t, f.ingest(t, f.all, "events", fmt.Sprintf(`{"ts":%d,"user":"u%d"}`, i, i), "traceparent", tp), http.StatusAccepted, nil)
	}
	wantJSON(t, f.ingest(t, f.other, "events", row1), http.StatusAccepted, nil)
	if n := len(f.settleQueued(t, &mq.Reason{Code: "type_mismatch", Message: "Cannot parse", Attempts: 2})); n != 4 {
		t.Fatalf("dead-lettered %d records, want 4", n)
	}
	var counts struct {
		Tables []struct {
			Table string
			Count uint64
		}
	}
	wantJSON(t, f.do(t, call{method: http.MethodGet, path: "/v1/ops/dlq", key: f.all}), http.StatusOK, &counts)
	if len(counts.Tables) != 1 || counts.Tables[0].Table != "events" || counts.Tables[0].Count != 3 {
		t.Fatalf("counts (acme's only): %+v", counts)
	}
	var page dlqList
	wantJSON(t, f.do(t, call{method: http.MethodGet, path: "/v1/ops/dlq/events?limit=2", key: f.all}), http.StatusOK, &page)
	if len(page.Entries) != 2 || page.NextAfter != page.Entries[1].ID {
		t.Fatalf("first page: %+v", page)
	}
	e := page.Entries[0]
	if e.Code != "type_mismatch" || e.Error != "Cannot parse" || e.Attempts != 2 || e.Traceparent != tp || e.Position == "" || e.DeadAt.IsZero() ||
		len(e.Rows) != 1 || string(e.Rows[0]) != `{"ts":"1970-01-01 00:00:00","user":"u0","note":null}` {
		t.Fatalf("entry %+v (rows %s)", e, e.Rows)
	}
	after := page.NextAfter
	page = dlqList{}
	wantJSON(t, f.do(t, call{method: http.MethodGet, path: fmt.Sprintf("/v1/ops/dlq/events?limit=2&after=%d", after), key: f.all}), http.StatusOK, &page)
	if len(page.Entries) != 1 || page.NextAfter != 0 {
		t.Fatalf("second page: %+v", page)
	}
	for _, q := range []string{"after=x", "limit=0", "limit=1001", "limit=x"} {
		wantError(t, f.do(t, call{method: http.MethodGet, path: "/v1/ops/dlq/events?" + q, key: f.all}), http.StatusBadRequest, "dlq.invalid")
	}
	var purged struct{ Purged uint64 }
	wantJSON(t, f.do(t, call{method: http.MethodDelete, path: "/v1/ops/dlq/events", key: f.all}), http.StatusOK, &purged)
	if purged.Purged != 3 {
		t.Fatalf("purged %d, want 3", purged.Purged)
	}
	wantJSON(t, f.do(t, call{method: http.MethodGet, path: "/v1/ops/dlq/events", key: f.other}), http.StatusOK, &page)
	if len(page.Entries) != 1 {
		t.Fatalf("globex's entry went with acme's purge: %+v", page)
	}
}

// TestDLQReplay: a dry run reports without republishing; entries still invalid for the table
// refuse the replay (409 dlq.still_invalid) unless force=true; a replay republishes the
// entries to the ingest queue and removes them.
func TestDLQReplay(t *testing.T) {
	f := newFixture(t, options{})
	wantJSON(t, f.ingest(t, f.all, "events", `{"ts":0,"user":"a","note":"x"}`+"\n"+row1+"\n"), http.StatusAccepted, nil)
	wantJSON(t, f.ingest(t, f.all, "events", row2), http.StatusAccepted, nil)
	f.settleQueued(t, &mq.Reason{Code: "bad_data", Message: "no"})
	type report struct {
		Entries  int  `json:"entries"`
		Rows     int  `json:"rows"`
		DryRun   bool `json:"dry_run"`
		Replayed *int `json:"replayed"`
		Invalid  []struct {
			ID     uint64 `json:"id"`
			Errors []struct{ Column, Code string }
		} `json:"invalid"`
	}
	var rep report
	replay := func(q string) response {
		return f.do(t, call{method: http.MethodPost, path: "/v1/ops/dlq/events/replay" + q, key: f.all})
	}
	rep = report{}
	wantJSON(t, replay("?dry_run=true"), http.StatusOK, &rep)
	if rep.Entries != 2 || rep.Rows != 3 || !rep.DryRun || rep.Replayed != nil || len(rep.Invalid) != 0 {
		t.Fatalf("dry run: %+v", rep)
	}
	exec(t, f.store, "ALTER TABLE "+f.db+".events DROP COLUMN note")
	e := wantError(t, replay(""), http.StatusConflict, "dlq.still_invalid")
	if !strings.Contains(string(e.Details), `"column":"note"`) || !strings.Contains(string(e.Details), `"code":"unknown_column"`) {
		t.Fatalf("still invalid: %s", e.Details)
	}
	exec(t, f.store, "ALTER TABLE "+f.db+".events ADD COLUMN note Nullable(String)")
	rep = report{}
	wantJSON(t, replay("?limit=1"), http.StatusOK, &rep)
	if rep.Replayed == nil || *rep.Replayed != 1 {
		t.Fatalf("replay: %+v", rep)
	}
	exec(t, f.store, "ALTER TABLE "+f.db+".events DROP COLUMN note")
	rep = report{}
	wantJSON(t, replay("?force=true"), http.StatusOK, &rep) // row2 has no note: valid anyway
	if rep.Replayed == nil || *rep.Replayed != 1 {
		t.Fatalf("forced replay: %+v", rep)
	}
	recs := f.settleQueued(t, nil)
	if len(recs) != 2 {
		t.Fatalf("republished %d records, want 2", len(recs))
	}
	var page dlqList
	wantJSON(t, f.do(t, call{method: http.MethodGet, path: "/v1/ops/dlq/events", key: f.all}), http.StatusOK, &page)
	if len(page.Entries) != 0 {
		t.Fatalf("replayed entries still listed: %+v", page)
	}
	wantError(t, f.do(t, call{method: http.MethodPost, path: "/v1/ops/dlq/nope/replay", key: f.all}), http.StatusNotFound, "table.unknown")
	wantError(t, replay("?limit=0"), http.StatusBadRequest, "dlq.invalid")
}

// TestDLQUnavailable: without a dead-letter queue the DLQ routes are 501 dlq.unavailable; with
// a queue that is gone they are 503 queue.unavailable with Retry-After.
func TestDLQUnavailable(t *testing.T) {
	f := newFixture(t, options{noDLQ: true})
	routes := []call{
		{method: http.MethodGet, path: "/v1/ops/dlq"},
		{method: http.MethodGet, path: "/v1/ops/dlq/events"},
		{method: http.MethodPost, path: "/v1/ops/dlq/events/replay"},
		{method: http.MethodDelete, path: "/v1/ops/dlq/events"},
	}
	for _, c := range routes {
		c.key = f.all
		wantError(t, f.do(t, c), http.StatusNotImplemented, "dlq.unavailable")
	}
	g := newFixture(t, options{})
	if err := g.queue.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, c := range routes {
		c.key = g.all
		r := g.do(t, c)
		wantError(t, r, http.StatusServiceUnavailable, "queue.unavailable")
		if r.header.Get("Retry-After") == "" {
			t.Fatalf("%s %s: no Retry-After", c.method, c.path)
		}
	}
}

// TestDLQViewOfUndecodable: an entry of a message that was no decodable frame is shown with its
// raw bytes and no rows; a record whose payload does not decode is shown without rows.
func TestDLQViewOfUndecodable(t *testing.T) {
	v := viewEntry(mq.DeadEntry{ID: 7, Reason: mq.Reason{Code: mq.ReasonUndecodable}, Raw: &mq.RawMessage{Subject: "wh.p.0", Seq: 9, Data: []byte{1, 2}}})
	if v.Raw == nil || v.Raw.Seq != 9 || base64.StdEncoding.EncodeToString(v.Raw.Data) != "AQI=" || len(v.Rows) != 0 {
		t.Fatalf("%+v", v)
	}
	v = viewEntry(mq.DeadEntry{ID: 8, Record: mq.Record{Payload: []byte("not a payload")}})
	if v.Raw != nil || len(v.Rows) != 0 {
		t.Fatalf("%+v", v)
	}
}
