package stream_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/stream"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// TestLiveDeliveryBeforeInsert: a row is streamed as soon as it is in the
// queue, while no ingest consumer has inserted (acknowledged) it.
func TestLiveDeliveryBeforeInsert(t *testing.T) {
	q := openQueue(t, t.TempDir())
	s := newServer(t, q, stream.Config{})
	c := dial(t, streamURL(s, "events", ""), nil)
	warm(t, q, "events", c)

	pos := publish(t, q, "events", []any{1, "ann"}, []any{2, "bob"})
	ev := c.nextRows(t)
	if ev.ID != eid(t, q, "events", pos) {
		t.Fatalf("id %q, want %q", ev.ID, pos)
	}
	if want := "[" + rowData(1, "ann") + "," + rowData(2, "bob") + "]"; ev.Data != want {
		t.Fatalf("data %s, want %s", ev.Data, want)
	}
	st, err := q.Stats(t.Context(), tenant, "events")
	if err != nil {
		t.Fatal(err)
	}
	if st.AckFloor >= pos.Seq {
		t.Fatalf("the record was already acknowledged (ack floor %d): the test proves nothing", st.AckFloor)
	}
	if got := gatherCounter(t, s.reg, "wavehouse_stream_subscribers", "", ""); got != 1 {
		t.Fatalf("subscribers gauge %v, want 1", got)
	}
}

// TestHeadersRetryHeartbeat checks the SSE response headers, the retry hint
// and the heartbeat comment.
func TestHeadersRetryHeartbeat(t *testing.T) {
	q := openQueue(t, t.TempDir())
	s := newServer(t, q, stream.Config{Heartbeat: 100 * time.Millisecond, Retry: 1500 * time.Millisecond})
	c := dial(t, streamURL(s, "events", "since=now"), nil)
	h := c.resp.Header
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "X-Accel-Buffering": "no", "Cache-Control": "no-cache"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	c.comment(t, "retry 1500")
	c.comment(t, "heartbeat")
	c.comment(t, "heartbeat")
}

// TestProjectionAndFilter: ?columns projects (in the requested order) and
// ?where.col=value keeps matching rows; strings match their unquoted text,
// other values their JSON text. Events with no matching row are not sent.
func TestProjectionAndFilter(t *testing.T) {
	q := openQueue(t, t.TempDir())
	s := newServer(t, q, stream.Config{Heartbeat: 100 * time.Millisecond})
	cols := []string{"ts", "user", "n", "ok"}
	pub := func(rows ...[]any) mq.Position {
		res, err := q.Publish(t.Context(), mq.Record{Tenant: tenant, Table: "ev", Payload: encode(t, cols, rows...)})
		if err != nil {
			t.Fatal(err)
		}
		return res.Position
	}
	p1 := pub([]any{"2026-01-01 00:00:00", "ann", 1, true}, []any{"2026-01-01 00:00:01", "bob", 2, false})
	p2 := pub([]any{"2026-01-01 00:00:02", "bob", 3, nil})
	p3 := pub([]any{"2026-01-01 00:00:03", "ann", "18446744073709551615", true})

	all := dial(t, streamURL(s, "ev", "since=0"), nil)
	if ev := all.nextRows(t); ev.ID != eid(t, q, "ev", p1) || ev.Data != `[{"ts":"2026-01-01 00:00:00","user":"ann","n":1,"ok":true},{"ts":"2026-01-01 00:00:01","user":"bob","n":2,"ok":false}]` {
		t.Fatalf("plain event %q %s", ev.ID, ev.Data)
	}

	proj := dial(t, streamURL(s, "ev", "since=0&columns=n,user,missing"), nil)
	if ev := proj.nextRows(t); ev.Data != `[{"n":1,"user":"ann"},{"n":2,"user":"bob"}]` {
		t.Fatalf("projected %s", ev.Data)
	}

	bob := dial(t, streamURL(s, "ev", "since=0&where.user=bob&columns=n"), nil)
	if ev := bob.nextRows(t); ev.ID != eid(t, q, "ev", p1) || ev.Data != `[{"n":2}]` {
		t.Fatalf("where.user=bob first %q %s", ev.ID, ev.Data)
	}
	if ev := bob.nextRows(t); ev.ID != eid(t, q, "ev", p2) || ev.Data != `[{"n":3}]` {
		t.Fatalf("where.user=bob second %q %s", ev.ID, ev.Data)
	}

	num := dial(t, streamURL(s, "ev", "since=0&where.ok=true&where.n=18446744073709551615"), nil)
	if ev := num.nextRows(t); ev.ID != eid(t, q, "ev", p3) || !strings.Contains(ev.Data, `"n":"18446744073709551615"`) {
		t.Fatalf("where on bool and quoted UInt64: %q %s", ev.ID, ev.Data)
	}

	// p1 and p2 do not match where.user=nobody: the stream sends their ids
	// alone (no event) before a heartbeat, so a reconnect skips them.
	none := dial(t, streamURL(s, "ev", "since=0&where.user=nobody"), nil)
	ev := none.next(t)
	if ev.Type != "" || ev.ID != eid(t, q, "ev", p3) {
		t.Fatalf("got %+v, want an id-only block with id %s", ev, p3)
	}
}

// TestRequestErrors covers a malformed id (400) and the per-tenant
// subscriber limit (429 with Retry-After; other tenants unaffected).
func TestRequestErrors(t *testing.T) {
	q := openQueue(t, t.TempDir())
	s := newServer(t, q, stream.Config{MaxSubscribers: 1})

	bad := dial(t, streamURL(s, "events", "since=abc"), nil)
	if bad.resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("since=abc: status %d", bad.resp.StatusCode)
	}
	var body struct{ Code string }
	if err := json.NewDecoder(bad.resp.Body).Decode(&body); err != nil || body.Code != "stream.invalid_id" {
		t.Fatalf("since=abc body: %+v %v", body, err)
	}

	first := dial(t, streamURL(s, "events", ""), nil)
	first.comment(t, "stream open")
	second := dial(t, streamURL(s, "other", ""), nil)
	if second.resp.StatusCode != http.StatusTooManyRequests || second.resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second stream of the tenant: status %d, Retry-After %q", second.resp.StatusCode, second.resp.Header.Get("Retry-After"))
	}
	other := dial(t, streamURL(s, "events", ""), map[string]string{"X-Tenant": "t2"})
	if other.resp.StatusCode != http.StatusOK {
		t.Fatalf("another tenant: status %d", other.resp.StatusCode)
	}
	first.Close()
	poll.Until(t, 10*time.Second, "the closed stream to release its slot", func() bool { return s.svc.Subscribers(tenant) == 0 })
	third := dial(t, streamURL(s, "events", ""), nil)
	if third.resp.StatusCode != http.StatusOK {
		t.Fatalf("after the first closed: status %d", third.resp.StatusCode)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (stream.Config{}).Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	err := stream.Config{Heartbeat: time.Millisecond, Buffer: -1, SlowPolicy: "drop", MaxSubscribers: -2}.Validate()
	for _, key := range []string{"stream.heartbeat", "stream.buffer", "stream.slow_policy", "stream.max_subscribers"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("error %v does not name %s", err, key)
		}
	}
}

// TestCloseEndsStreams: Close ends live and resuming streams with a comment
// (clients reconnect elsewhere with Last-Event-ID) and refuses new ones.
func TestCloseEndsStreams(t *testing.T) {
	q := openQueue(t, t.TempDir())
	s := newServer(t, q, stream.Config{})
	pos := publish(t, q, "events", []any{1, "a"})
	live := dial(t, streamURL(s, "events", ""), nil)
	live.comment(t, "stream open")
	resumed := dial(t, streamURL(s, "events", "since=0"), nil)
	if ev := resumed.nextRows(t); ev.ID != eid(t, q, "events", pos) {
		t.Fatalf("id %s, want %s", ev.ID, pos)
	}
	if err := s.svc.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	live.comment(t, "server shutting down")
	resumed.comment(t, "server shutting down")
	after := dial(t, streamURL(s, "events", ""), nil)
	if after.resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("after Close: status %d, want 503", after.resp.StatusCode)
	}
	if err := s.svc.Close(t.Context()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
