package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/testutil/metrictest"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

const (
	row1 = `{"ts":"2026-01-01 00:00:00","user":"a","n":1}`
	row2 = `{"ts":"2026-01-01 00:00:01","user":"b"}`
	tp   = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
)

// TestIngestAcceptsAndQueuesOnce: a valid NDJSON request is answered 202 with the count and the
// queue position of the one record it became, whose rows are the canonical rows in table order
// and whose headers carry the client's traceparent (echoed in the response).
func TestIngestAcceptsAndQueuesOnce(t *testing.T) {
	f := newFixture(t, options{})
	r := f.ingest(t, f.all, "events", row1+"\n"+row2+"\n", "traceparent", tp)
	var got ingestResponse
	wantJSON(t, r, http.StatusAccepted, &got)
	if got.Accepted != 2 || got.Sequence == "" || got.Committed != nil || r.header.Get("traceparent") != tp {
		t.Fatalf("got %s (traceparent %q)", r.body, r.header.Get("traceparent"))
	}
	recs := f.settleQueued(t, nil)
	if len(recs) != 1 || recs[0].Position.String() != got.Sequence || recs[0].Headers[mq.HeaderTraceparent] != tp || recs[0].Tenant != "acme" {
		t.Fatalf("queued %+v, want one acme record at %s with the traceparent", recs, got.Sequence)
	}
	segs, err := payload.Decode(recs[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, s := range segs {
		canon, err := s.CanonicalRows()
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range canon {
			rows = append(rows, strings.Join(s.Columns, ",")+"="+string(row))
		}
	}
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "ts,user,n") || !strings.HasPrefix(rows[1], "ts,user") {
		t.Fatalf("queued rows %q", rows)
	}
	// A malformed traceparent is replaced by a new valid one.
	r = f.ingest(t, f.all, "events", row1, "traceparent", "00-zz")
	if !validTraceparent(r.header.Get("traceparent")) {
		t.Fatalf("traceparent %q", r.header.Get("traceparent"))
	}
	if v := metrictest.Value(t, f.reg, "wavehouse_ingest_rows_accepted_total", nil); v != 3 {
		t.Fatalf("rows accepted %v, want 3", v)
	}
}

// TestIngestBodyErrors: each request-level failure answers its documented status and code and
// queues nothing.
func TestIngestBodyErrors(t *testing.T) {
	f := newFixture(t, options{cfg: func(c *Config) { c.Limits.MaxBodyBytes = 200; c.Limits.MaxRows = 3 }})
	gz := func(s string) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write([]byte(s))
		_ = w.Close()
		return b.String()
	}
	for _, c := range []struct {
		name   string
		c      call
		status int
		code   string
	}{
		{"unsupported content type", call{body: row1, header: map[string]string{"Content-Type": "text/plain"}}, 415, "ingest.unsupported_media_type"},
		{"unsupported encoding", call{body: row1, header: map[string]string{"Content-Encoding": "xz"}}, 415, "ingest.unsupported_encoding"},
		{"corrupt gzip", call{body: row1, header: map[string]string{"Content-Encoding": "gzip"}}, 400, "ingest.corrupt_body"},
		{"body too large", call{body: "[" + strings.Repeat(row1+",", 5) + row1 + "]"}, 413, "ingest.body_too_large"},
		{"decompressed too large", call{body: gz(strings.Repeat(" ", 300) + row1), header: map[string]string{"Content-Encoding": "gzip"}}, 413, "ingest.body_too_large"},
		{"body read failed", call{bodyReader: iotest.ErrReader(errors.New("connection reset"))}, 400, "ingest.body_read_failed"},
		{"too many rows", call{body: "[{},{},{},{}]"}, 413, "ingest.too_many_rows"},
		{"empty body", call{body: "[]"}, 400, "ingest.empty_body"},
		{"malformed JSON", call{body: `[{"user":}]`}, 400, "ingest.malformed_json"},
		{"invalid wait", call{path: "/v1/ingest/events?wait=inserted", body: row1}, 400, "ingest.invalid_parameter"},
		{"invalid table name", call{path: "/v1/ingest/ev%01ents", body: row1}, 400, "ingest.invalid_table"},
		{"unknown table", call{path: "/v1/ingest/nope", body: row1}, 404, "table.unknown"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.c.method, c.c.key = http.MethodPost, f.all
			if c.c.path == "" {
				c.c.path = "/v1/ingest/events"
			}
			wantError(t, f.do(t, c.c), c.status, c.code)
		})
	}
	if recs := f.settleQueued(t, nil); len(recs) != 0 {
		t.Fatalf("refused requests queued %d records", len(recs))
	}
}

// TestIngestRowErrorsNameRowAndColumn: an atomic request with a bad row is refused whole with
// every row error naming its row and column; with partial=true the valid rows are queued and the
// rejected ones reported; a partial request with no valid row is refused with the same details.
func TestIngestRowErrorsNameRowAndColumn(t *testing.T) {
	f := newFixture(t, options{})
	bad := `{"ts":"2026-01-01 00:00:02","user":"c","n":300}`
	e := wantError(t, f.ingest(t, f.all, "events", row1+"\n"+bad+"\n"), 400, "ingest.invalid_rows")
	for _, want := range []string{`"row":1`, `"column":"n"`, `"code":"out_of_range"`, `"errors_by_code":{"out_of_range":1}`} {
		if !strings.Contains(string(e.Details), want) {
			t.Errorf("details %s lack %s", e.Details, want)
		}
	}
	if n := len(f.settleQueued(t, nil)); n != 0 {
		t.Fatalf("an atomic request with a bad row queued %d records", n)
	}
	var got ingestResponse
	wantJSON(t, f.do(t, call{method: http.MethodPost, path: "/v1/ingest/events?partial=true", key: f.all, body: row1 + "\n" + bad + "\n",
		header: map[string]string{"Content-Type": "application/x-ndjson"}}), http.StatusAccepted, &got)
	if got.Accepted != 1 || got.Rejected != 1 || len(got.Errors) != 1 || got.Errors[0].Row != 1 || got.Errors[0].Column != "n" {
		t.Fatalf("partial: %+v", got)
	}
	if n := len(f.settleQueued(t, nil)); n != 1 {
		t.Fatalf("partial request queued %d records, want 1", n)
	}
	e = wantError(t, f.do(t, call{method: http.MethodPost, path: "/v1/ingest/events?partial=true", key: f.all, body: bad}), 400, "ingest.invalid_rows")
	for _, want := range []string{`"total":1`, `"rejected":1`, `"column":"n"`, `"errors_by_code":{"out_of_range":1}`} {
		if !strings.Contains(string(e.Details), want) {
			t.Errorf("partial, no valid row: details %s lack %s", e.Details, want)
		}
	}
	if v := metrictest.Value(t, f.reg, "wavehouse_ingest_rows_rejected_total", nil); v != 2 {
		t.Fatalf("rows rejected %v, want 2 (the partial requests' bad rows)", v)
	}
}

// TestIngestSeesAddedColumn: a row naming a column the table gained after its schema was cached
// is accepted: the unknown column makes the handler read the schema again.
func TestIngestSeesAddedColumn(t *testing.T) {
	f := newFixture(t, options{})
	wantJSON(t, f.ingest(t, f.all, "events", row1), http.StatusAccepted, nil) // caches the schema
	exec(t, f.store, "ALTER TABLE "+f.db+".events ADD COLUMN colour String DEFAULT ''")
	var got ingestResponse
	wantJSON(t, f.ingest(t, f.all, "events", `{"ts":"2026-01-01 00:00:00","user":"a","colour":"red"}`), http.StatusAccepted, &got)
	if got.Accepted != 1 {
		t.Fatalf("%+v", got)
	}
}

// TestIngestWaitCommitted: wait=committed answers 200 committed once the record is inserted,
// 202 dead_lettered when it was dead-lettered, 202 committed false when the wait times out, and
// 202 committed false at once in a process that does not insert (no commit log).
func TestIngestWaitCommitted(t *testing.T) {
	f := newFixture(t, options{cfg: func(c *Config) { c.WaitTimeout = 300 * time.Millisecond }})
	waitFor := func(reason *mq.Reason) ingestResponse {
		t.Helper()
		done := make(chan response, 1)
		go func() {
			done <- f.do(t, call{method: http.MethodPost, path: "/v1/ingest/events?wait=committed", key: f.all, body: row1})
		}()
		var got ingestResponse
		settled := false
		poll.Until(t, 10*time.Second, "the request's record to be queued and settled", func() bool {
			select {
			case r := <-done:
				wantJSON(t, r, r.status, &got)
				return true
			default:
			}
			if !settled {
				settled = len(f.settleQueued(t, reason)) > 0
			}
			return false
		})
		return got
	}
	// The timeout must not end this one: it is longer than poll's interval by far.
	f.api.cfg.WaitTimeout = 30 * time.Second
	if got := waitFor(nil); got.Committed == nil || !*got.Committed {
		t.Fatalf("inserted: %+v", got)
	}
	if got := waitFor(&mq.Reason{Code: "type_mismatch", Message: "bad"}); got.Committed == nil || *got.Committed || !got.DeadLettered {
		t.Fatalf("dead-lettered: %+v", got)
	}
	f.api.cfg.WaitTimeout = 50 * time.Millisecond
	var got ingestResponse
	wantJSON(t, f.do(t, call{method: http.MethodPost, path: "/v1/ingest/events?wait=committed", key: f.all, body: row1}), http.StatusAccepted, &got)
	if got.Committed == nil || *got.Committed {
		t.Fatalf("timed out: %+v", got)
	}

	g := newFixture(t, options{noCommits: true})
	wantJSON(t, g.do(t, call{method: http.MethodPost, path: "/v1/ingest/events?wait=committed", key: g.all, body: row1}), http.StatusAccepted, &got)
	if got.Committed == nil || *got.Committed {
		t.Fatalf("no commit log: %+v", got)
	}
}

// TestIngestQueueErrors: a tenant over its queue budget gets 429 ingest.queue_full with
// Retry-After, a record over the queue's size limit 413 ingest.body_too_large, and a queue that
// is gone 503 ingest.queue_unavailable with Retry-After.
func TestIngestQueueErrors(t *testing.T) {
	f := newFixture(t, options{queue: func(c *embeddedmq.Config) {
		c.TenantBudget = func(tenant string) int64 {
			if tenant == "acme" {
				return 1
			}
			return -1
		}
		c.MaxRecordBytes = 64 << 10
	}})
	r := f.ingest(t, f.all, "events", row1)
	if e := wantError(t, r, http.StatusTooManyRequests, "ingest.queue_full"); !e.Retryable || r.header.Get("Retry-After") == "" {
		t.Fatalf("queue_full: retryable %v, Retry-After %q", e.Retryable, r.header.Get("Retry-After"))
	} else if !strings.Contains(e.Message, "tenant's queue budget") {
		t.Fatalf("queue_full over the tenant's budget says %q, want it to name the tenant's budget", e.Message)
	}
	big := fmt.Sprintf(`{"ts":"2026-01-01 00:00:00","user":%q}`, strings.Repeat("x", 100<<10))
	wantError(t, f.ingest(t, f.other, "events", big), http.StatusRequestEntityTooLarge, "ingest.body_too_large")
	if err := f.queue.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	r = f.ingest(t, f.other, "events", row1)
	if e := wantError(t, r, http.StatusServiceUnavailable, "ingest.queue_unavailable"); !e.Retryable || r.header.Get("Retry-After") == "" {
		t.Fatalf("queue_unavailable: retryable %v, Retry-After %q", e.Retryable, r.header.Get("Retry-After"))
	}
}

// TestIngestStreamFull: a tenant without a budget that fills its table's partition stream gets
// 429 ingest.queue_full naming the stream's byte bound, not a tenant budget.
func TestIngestStreamFull(t *testing.T) {
	f := newFixture(t, options{queue: func(c *embeddedmq.Config) {
		c.MaxBytes, c.TenantMaxBytes = 64<<10, -1
	}})
	row := fmt.Sprintf(`{"ts":"2026-01-01 00:00:00","user":%q}`, strings.Repeat("x", 8<<10))
	for i := range 20 {
		r := f.ingest(t, f.all, "events", row)
		if r.status == http.StatusAccepted {
			continue
		}
		e := wantError(t, r, http.StatusTooManyRequests, "ingest.queue_full")
		if !e.Retryable || r.header.Get("Retry-After") == "" {
			t.Fatalf("request %d: queue_full: retryable %v, Retry-After %q", i, e.Retryable, r.header.Get("Retry-After"))
		}
		if !strings.Contains(e.Message, "partition stream") || strings.Contains(e.Message, "tenant") {
			t.Fatalf("queue_full of a full stream says %q, want it to name the partition stream's bound", e.Message)
		}
		return
	}
	t.Fatal("160 KiB of rows accepted into a 64 KiB partition stream")
}

// TestPublishErrCanceled: a publish ended by the client's going away is 499 ingest.canceled,
// retryable (the rows may or may not be queued).
func TestPublishErrCanceled(t *testing.T) {
	a := &API{}
	e := a.publishErr(fmt.Errorf("publish: %w", context.Canceled))
	if e.Status != statusClientClosed || e.Code != "ingest.canceled" || !e.Retryable {
		t.Fatalf("%+v", e)
	}
}

// TestIngestRowLimits: rows over the tenant's rows_burst can never pass (429 limits.rows, not
// retryable); rows over the rate are refused with Retry-After (retryable); nothing is queued.
func TestIngestRowLimits(t *testing.T) {
	f := newFixture(t, options{limits: "{rows_per_second: 0.001, rows_burst: 2}"})
	e := wantError(t, f.ingest(t, f.all, "events", row1+"\n"+row1+"\n"+row1+"\n"), http.StatusTooManyRequests, "limits.rows")
	if e.Retryable {
		t.Fatal("more rows than the burst must not be retryable")
	}
	wantJSON(t, f.ingest(t, f.all, "events", row1+"\n"+row1+"\n"), http.StatusAccepted, nil)
	r := f.ingest(t, f.all, "events", row1)
	if e := wantError(t, r, http.StatusTooManyRequests, "limits.rows"); !e.Retryable || r.header.Get("Retry-After") == "" {
		t.Fatalf("over the rate: retryable %v, Retry-After %q", e.Retryable, r.header.Get("Retry-After"))
	}
	if n := len(f.settleQueued(t, nil)); n != 1 {
		t.Fatalf("queued %d records, want only the admitted one", n)
	}
	for outcome, want := range map[string]uint64{"accepted": 1, "limited": 2} {
		if got := histCount(t, f, outcome); got != want {
			t.Errorf("outcome %s counted %d times, want %d", outcome, got, want)
		}
	}
}
