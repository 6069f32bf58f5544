package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/dedupe/localdedupe"
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
	a.settleThenSend(t.Context(), c, rec, client)
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
	a.settleThenSend(t.Context(), &claim{key: key, token: res.Claim.Token, fingerprint: "fp"}, rec, client)
	if client.Code != http.StatusServiceUnavailable || !strings.Contains(client.Body.String(), "idempotency.unsettled") || client.Header().Get("Retry-After") == "" {
		t.Fatalf("got %d %q (Retry-After %q), want 503 idempotency.unsettled with Retry-After", client.Code, client.Body.String(), client.Header().Get("Retry-After"))
	}
}
