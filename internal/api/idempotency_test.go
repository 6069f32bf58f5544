package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/dedupe/localdedupe"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// events records the order of what the idempotency path does.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, s)
}

// committing is the real Pebble dedupe store, noting each commit.
type committing struct {
	*localdedupe.Store
	ev *events
}

func (c committing) Commit(ctx context.Context, key dedupe.Key, token string, resp dedupe.Response, retention time.Duration) error {
	err := c.Store.Commit(ctx, key, token, resp, retention)
	c.ev.add("commit")
	return err
}

// statusWriter notes when the status line is sent to the client.
type statusWriter struct {
	*httptest.ResponseRecorder
	ev *events
}

func (w statusWriter) WriteHeader(code int) {
	w.ev.add("status")
	w.ResponseRecorder.WriteHeader(code)
}

// TestIdempotencyRecordDurableBeforeResponse: a keyed request's record is committed (and
// survives a restart of the store) before its 2xx reaches the client, so a client that saw the
// 2xx and retries after any delay — past the queue's duplicate window — is answered from the
// record instead of being enqueued again.
func TestIdempotencyRecordDurableBeforeResponse(t *testing.T) {
	dir := t.TempDir()
	st, err := localdedupe.New(localdedupe.Config{Dir: dir}, localdedupe.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ev := &events{}
	a := &API{cfg: Config{Idempotency: Idempotency{Lease: time.Minute, Retention: time.Hour}},
		deps: Deps{Dedupe: committing{Store: st, ev: ev}, Log: slog.New(slog.DiscardHandler)}}
	key := dedupe.Key{Tenant: "acme", Table: "events", ID: "k1"}
	res, err := st.Reserve(t.Context(), key, "fp", time.Minute)
	if err != nil || res.Outcome != dedupe.OutcomeClaimed {
		t.Fatalf("reserve = %+v, %v", res, err)
	}
	c := &claim{key: key, token: res.Claim.Token, fingerprint: "fp"}
	client := statusWriter{ResponseRecorder: httptest.NewRecorder(), ev: ev}
	rec := &recorder{ResponseWriter: client}
	rec.WriteHeader(http.StatusAccepted)
	_, _ = rec.Write([]byte(`{"accepted":1}`))
	if len(ev.list) != 0 || client.Code != http.StatusOK || client.Body.Len() != 0 {
		t.Fatalf("the response reached the client before the record was settled: events %v, body %q", ev.list, client.Body.String())
	}
	a.settleThenSend(ingestCall{ctx: t.Context(), out: jsonAnswers{}}, c, rec, client)
	if got := ev.list; len(got) != 2 || got[0] != "commit" || got[1] != "status" {
		t.Fatalf("order %v, want the commit before the status line", got)
	}
	if client.Code != http.StatusAccepted || client.Body.String() != `{"accepted":1}` {
		t.Fatalf("client got %d %q", client.Code, client.Body.String())
	}
	if err := st.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	st, err = localdedupe.New(localdedupe.Config{Dir: dir}, localdedupe.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	got, err := st.Get(t.Context(), key)
	if err != nil || got.State != dedupe.StateCommitted || got.Response.Status != http.StatusAccepted {
		t.Fatalf("after a restart of the store: %+v, %v; want the committed 202", got, err)
	}
}

// TestUnsettledRecordAnswersRetry: when the record of an accepted request cannot be stored, the
// client is not told "accepted" (a retry much later would be enqueued again) but asked to retry
// at once, which the queue's duplicate window recognises.
func TestUnsettledRecordAnswersRetry(t *testing.T) {
	st, err := localdedupe.New(localdedupe.Config{Dir: t.TempDir()}, localdedupe.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	key := dedupe.Key{Tenant: "acme", Table: "events", ID: "k2"}
	res, err := st.Reserve(t.Context(), key, "fp", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Close(t.Context()) // the dedupe store is gone when the response is settled
	a := &API{cfg: Config{Idempotency: Idempotency{Lease: time.Minute, Retention: time.Hour}},
		deps: Deps{Dedupe: st, Log: slog.New(slog.DiscardHandler)}}
	client := httptest.NewRecorder()
	rec := &recorder{ResponseWriter: client}
	rec.WriteHeader(http.StatusAccepted)
	a.settleThenSend(ingestCall{ctx: t.Context(), out: jsonAnswers{}}, &claim{key: key, token: res.Claim.Token, fingerprint: "fp"}, rec, client)
	if client.Code != http.StatusServiceUnavailable || !strings.Contains(client.Body.String(), "idempotency.unsettled") || client.Header().Get("Retry-After") == "" {
		t.Fatalf("got %d %q (Retry-After %q), want 503 idempotency.unsettled with Retry-After", client.Code, client.Body.String(), client.Header().Get("Retry-After"))
	}
}

// TestIdempotencyKeyOnTheRoute: the same key with the same request replays the recorded answer
// byte for byte with Idempotent-Replayed and queues nothing again; with another body it is
// 422 idempotency.key_reused; a malformed key is 400 idempotency.invalid_key.
func TestIdempotencyKeyOnTheRoute(t *testing.T) {
	f := newFixture(t, options{})
	first := f.ingest(t, f.all, "events", row1, IdempotencyHeader, "order-1")
	wantJSON(t, first, http.StatusAccepted, nil)
	again := f.ingest(t, f.all, "events", row1, IdempotencyHeader, "order-1")
	if again.status != http.StatusAccepted || string(again.body) != string(first.body) || again.header.Get(ReplayedHeader) != "true" {
		t.Fatalf("retry: %d %s (replayed %q), want the first answer %s replayed", again.status, again.body, again.header.Get(ReplayedHeader), first.body)
	}
	wantError(t, f.ingest(t, f.all, "events", row2, IdempotencyHeader, "order-1"), http.StatusUnprocessableEntity, "idempotency.key_reused")
	// The same key on another table is another key.
	wantJSON(t, f.ingest(t, f.all, "other_table_missing", row1, IdempotencyHeader, "order-1"), http.StatusNotFound, nil)
	for _, k := range []string{"bad\x01key", strings.Repeat("k", 256)} {
		wantError(t, f.ingest(t, f.all, "events", row1, IdempotencyHeader, k), http.StatusBadRequest, "idempotency.invalid_key")
	}
	if n := len(f.settleQueued(t, nil)); n != 1 {
		t.Fatalf("queued %d records, want 1: a replay must not enqueue again", n)
	}
	for outcome, want := range map[string]uint64{"accepted": 1, "replayed": 1, "rejected": 3, "error": 1} {
		if got := histCount(t, f, outcome); got != want {
			t.Errorf("outcome %s counted %d times, want %d", outcome, got, want)
		}
	}
}

// TestIdempotencyInFlightAndRelease: a key another request holds is 409 idempotency.in_flight
// with a Retry-After of at most a second; a retryable failure (429 queue_full) releases the key,
// so the retry is processed as new instead of replaying the 429; a dedupe store that cannot be
// reached is 503 dedupe.unavailable.
func TestIdempotencyInFlightAndRelease(t *testing.T) {
	budget := atomic.Int64{}
	budget.Store(1)
	f := newFixture(t, options{queue: func(c *embeddedmq.Config) {
		c.TenantBudget = func(string) int64 { return budget.Load() }
	}})
	req := httptest.NewRequest(http.MethodPost, "/v1/ingest/events", nil)
	req.Header.Set("Content-Type", "application/json")
	key := dedupe.Key{Tenant: "acme", Table: "events", ID: "held"}
	if _, err := f.dedupe.Reserve(t.Context(), key, fingerprint("acme", "events", []string{req.Header.Get("Content-Type"), "", ""}, []byte(row1)), time.Minute); err != nil {
		t.Fatal(err)
	}
	r := f.ingest(t, f.all, "events", row1, IdempotencyHeader, "held")
	wantError(t, r, http.StatusConflict, "idempotency.in_flight")
	if r.header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q, want 1", r.header.Get("Retry-After"))
	}

	wantError(t, f.ingest(t, f.all, "events", row1, IdempotencyHeader, "k2"), http.StatusTooManyRequests, "ingest.queue_full")
	budget.Store(-1)
	r = f.ingest(t, f.all, "events", row1, IdempotencyHeader, "k2")
	wantJSON(t, r, http.StatusAccepted, nil)
	if r.header.Get(ReplayedHeader) != "" {
		t.Fatal("the retry after a 429 was answered from a record")
	}

	if err := f.dedupe.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantError(t, f.ingest(t, f.all, "events", row1, IdempotencyHeader, "k3"), http.StatusServiceUnavailable, "dedupe.unavailable")
	// Without a key the dedupe store is not needed.
	wantJSON(t, f.ingest(t, f.all, "events", row1), http.StatusAccepted, nil)
}

// TestIdempotencyWithoutDedupeStore: with idempotency disabled the header is ignored: each
// request is queued.
func TestIdempotencyWithoutDedupeStore(t *testing.T) {
	f := newFixture(t, options{noDedupe: true})
	for range 2 {
		r := f.ingest(t, f.all, "events", row1, IdempotencyHeader, "k")
		wantJSON(t, r, http.StatusAccepted, nil)
	}
	if n := len(f.settleQueued(t, nil)); n != 2 {
		t.Fatalf("queued %d records, want 2", n)
	}
}

// TestIdempotencyPanicSettlesNothing: when the handler behind a won claim panics, no response is
// recorded for the key (the old deferred settle recorded an empty 200 that every retry would
// have replayed) and nothing reaches the client, so the panic recovery can answer 500.
func TestIdempotencyPanicSettlesNothing(t *testing.T) {
	f := newFixture(t, options{})
	req := httptest.NewRequest(http.MethodPost, "/v1/ingest/events", nil)
	req.Header.Set(IdempotencyHeader, "p1")
	client := httptest.NewRecorder()
	call := ingestCall{ctx: t.Context(), tenant: "acme", table: "events", body: []byte(row1), idemKey: "p1", out: jsonAnswers{}}
	func() {
		defer func() { _ = recover() }()
		f.api.idempotent(client, req, call, func(w http.ResponseWriter, _ *keyedRecord) string {
			w.WriteHeader(http.StatusAccepted)
			panic("boom")
		})
	}()
	rec, err := f.dedupe.Get(t.Context(), dedupe.Key{Tenant: "acme", Table: "events", ID: "p1"})
	if err != nil || rec.State != dedupe.StatePending {
		t.Fatalf("record %+v, %v; want the claim still pending", rec, err)
	}
	if client.Body.Len() != 0 || client.Code != http.StatusOK { // the recorder's untouched default
		t.Fatalf("client got %d %q", client.Code, client.Body.String())
	}
}

// TestIdempotencyRetentionPerTenant: a recorded response is kept for the tenant's own retention
// (acme: 2h in its settings), else for Config.Idempotency.Retention (24h by default).
func TestIdempotencyRetentionPerTenant(t *testing.T) {
	f := newFixture(t, options{})
	for _, c := range []struct {
		tenant, key string
		want        time.Duration
	}{{"acme", f.all, 2 * time.Hour}, {"globex", f.other, 24 * time.Hour}} {
		wantJSON(t, f.ingest(t, c.key, "events", row1, IdempotencyHeader, "r1"), http.StatusAccepted, nil)
		rec, err := f.dedupe.Get(t.Context(), dedupe.Key{Tenant: c.tenant, Table: "events", ID: "r1"})
		if err != nil {
			t.Fatal(err)
		}
		if left := time.Until(rec.ExpiresAt); rec.State != dedupe.StateCommitted || left > c.want || left < c.want-time.Minute {
			t.Errorf("%s: %s, expires in %s; want committed for %s", c.tenant, rec.State, left, c.want)
		}
	}
}

// faulty is the real dedupe store with Commit or Mark failing on demand: Commit fails without
// writing (a crash between the publish and the commit), Mark writes the mark and then reports a
// failure (a DynamoDB timeout after the write landed).
type faulty struct {
	dedupe.Store
	failCommit, failMark atomic.Bool
}

func (f *faulty) Commit(ctx context.Context, key dedupe.Key, token string, resp dedupe.Response, retention time.Duration) error {
	if f.failCommit.Load() {
		return dedupe.ErrUnavailable
	}
	return f.Store.Commit(ctx, key, token, resp, retention)
}

func (f *faulty) Mark(ctx context.Context, frame string, until time.Time, claims []dedupe.Owned) []error {
	errs := f.Store.Mark(ctx, frame, until, claims)
	if f.failMark.Load() {
		for i := range errs {
			errs[i] = dedupe.ErrUnavailable
		}
	}
	return errs
}

// shortLease makes a claim the tests leave pending lapse quickly.
func shortLease(c *Config) { c.Idempotency.Lease = 200 * time.Millisecond }

// retryUntilSettled sends the keyed request until it gets something other than 409 in_flight
// (the lapsing lease of the claim the test left behind).
func retryUntilSettled(t *testing.T, f *fixture, key string) response {
	t.Helper()
	var r response
	poll.Until(t, 10*time.Second, "the pending claim's lease lapsed", func() bool {
		r = f.ingest(t, f.all, "events", row1, IdempotencyHeader, key)
		return r.status != http.StatusConflict
	})
	return r
}

// TestIdempotencyLostCommitResolvedByFrame: when a keyed request was published but its record
// was never committed (the commit failed; a crash there leaves the same pending, marked claim),
// the retry after the lease finds the claim's frame in the queue: the same position,
// Idempotent-Replayed, and one record queued, not two.
func TestIdempotencyLostCommitResolvedByFrame(t *testing.T) {
	var fs *faulty
	f := newFixture(t, options{cfg: shortLease, dedupe: func(s dedupe.Store) dedupe.Store { fs = &faulty{Store: s}; return fs }})
	fs.failCommit.Store(true)
	r := f.ingest(t, f.all, "events", row1, IdempotencyHeader, "lost")
	wantJSON(t, r, http.StatusServiceUnavailable, nil)
	fs.failCommit.Store(false)
	var again ingestResponse
	r = retryUntilSettled(t, f, "lost")
	wantJSON(t, r, http.StatusAccepted, &again)
	if r.header.Get(ReplayedHeader) != "true" {
		t.Fatalf("retry not marked replayed: %+v", again)
	}
	recs := f.settleQueued(t, nil)
	if len(recs) != 1 {
		t.Fatalf("queued %d records, want 1", len(recs))
	}
	if again.Sequence != recs[0].Position.String() {
		t.Fatalf("retry answered sequence %s, the record is at %s", again.Sequence, recs[0].Position)
	}
}

// TestIdempotencyUnknownMarkFencesFrame: a mark that was written but reported failed leaves the
// request out of its frame (503, the claim released with its mark kept); the retry resolves the
// mark, finds the request in no frame, fences the frame id off and publishes the rows once.
func TestIdempotencyUnknownMarkFencesFrame(t *testing.T) {
	var fs *faulty
	f := newFixture(t, options{dedupe: func(s dedupe.Store) dedupe.Store { fs = &faulty{Store: s}; return fs }})
	fs.failMark.Store(true)
	wantJSON(t, f.ingest(t, f.all, "events", row1, IdempotencyHeader, "unknown-mark"), http.StatusServiceUnavailable, nil)
	fs.failMark.Store(false)
	res, err := f.dedupe.Reserve(t.Context(), dedupe.Key{Tenant: "acme", Table: "events", ID: "other"}, "fp", time.Minute)
	if err != nil || res.Claim.Frame != "" {
		t.Fatalf("unrelated key: %+v, %v", res, err)
	}
	r := f.ingest(t, f.all, "events", row1, IdempotencyHeader, "unknown-mark")
	wantJSON(t, r, http.StatusAccepted, nil)
	if r.header.Get(ReplayedHeader) != "" {
		t.Fatalf("the rows were never queued, yet the retry says replayed")
	}
	if n := len(f.settleQueued(t, nil)); n != 1 {
		t.Fatalf("queued %d records, want 1", n)
	}
	wantJSON(t, f.ingest(t, f.all, "events", row1, IdempotencyHeader, "unknown-mark"), http.StatusAccepted, nil)
	if n := len(f.settleQueued(t, nil)); n != 0 {
		t.Fatalf("the replayed retry queued %d records", n)
	}
}
