package stream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/stream"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// gatedWriter is a ResponseWriter whose writes block while the gate is
// closed: a client that stopped reading.
type gatedWriter struct {
	header http.Header
	mu     sync.Mutex
	buf    bytes.Buffer
	gate   chan struct{} // nil: open
}

func newGatedWriter() *gatedWriter { return &gatedWriter{header: http.Header{}} }

func (w *gatedWriter) Header() http.Header { return w.header }
func (w *gatedWriter) WriteHeader(int)     {}
func (w *gatedWriter) Flush()              {}

func (w *gatedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	g := w.gate
	w.mu.Unlock()
	if g != nil {
		<-g
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}

func (w *gatedWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gate = make(chan struct{})
}

func (w *gatedWriter) open() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gate != nil {
		close(w.gate)
		w.gate = nil
	}
}

func (w *gatedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// serveDirect runs svc.ServeHTTP for table into w until the returned stop
// is called (or the handler returns by itself: done closes).
func serveDirect(t testing.TB, svc *stream.Service, table string, w http.ResponseWriter) (stop func(), done <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/stream/"+table, nil)
	r.SetPathValue("table", table)
	ch := make(chan struct{})
	go func() { defer close(ch); svc.ServeHTTP(w, r, tenant) }()
	stop = func() { cancel(); <-ch }
	t.Cleanup(stop)
	return stop, ch
}

// slowSetup starts a fast HTTP subscriber and a direct subscriber whose
// writer is then blocked, both live on one table.
func slowSetup(t *testing.T, cfg stream.Config) (*server, *embeddedmq.Queue, *sseConn, *gatedWriter, <-chan struct{}) {
	q := openQueue(t, t.TempDir())
	s := newServer(t, q, cfg)
	fast := dial(t, streamURL(s, "events", ""), nil)
	slow := newGatedWriter()
	_, done := serveDirect(t, s.svc, "events", slow)
	// The direct subscriber's handler runs in its own goroutine and is live
	// only from the moment it subscribes: a probe published before that is
	// never sent to it. So probes go on until it has seen the latest one.
	poll.Until(t, 20*time.Second, "the slow subscriber to see a probe", func() bool {
		want := "id: " + eid(t, q, "events", warm(t, q, "events", fast)) + "\n"
		return poll.Within(t, time.Second, func() bool { return strings.Contains(slow.String(), want) })
	})
	slow.close()
	t.Cleanup(slow.open) // runs before serveDirect's stop, which waits for the handler
	return s, q, fast, slow, done
}

// TestSlowSubscriberGap: a subscriber that stops reading gets an explicit
// gap event naming the ids it missed, while a fast subscriber on the same
// table receives every event in order and publishing never waits.
func TestSlowSubscriberGap(t *testing.T) {
	s, q, fast, slow, _ := slowSetup(t, stream.Config{Buffer: 4})
	// Each record is published once the fast subscriber got the previous
	// one: it keeps up, the slow one has stopped reading.
	var ids []string
	for i := range 50 {
		id := eid(t, q, "events", publish(t, q, "events", []any{i, "x"}))
		ids = append(ids, id)
		if ev := fast.nextRows(t); ev.ID != id {
			t.Fatalf("fast subscriber: id %s, want %s", ev.ID, id)
		}
	}
	slow.open()
	poll.Until(t, 20*time.Second, "the slow subscriber to catch up", func() bool {
		out := slow.String()
		return strings.Contains(out, "id: "+ids[49]+"\n") || strings.Contains(out, `"to":"`+ids[49]+`"`)
	})

	// Every id the slow subscriber did not get is inside a gap it was told about.
	out := slow.String()
	var gaps []struct{ From, To, After string }
	for _, block := range strings.Split(out, "\n\n") {
		data, ok := strings.CutPrefix(block, "event: gap\ndata: ")
		if !ok {
			continue
		}
		var g struct{ From, To, After string }
		if err := json.Unmarshal([]byte(data), &g); err != nil {
			t.Fatal(err)
		}
		gaps = append(gaps, g)
	}
	if len(gaps) == 0 {
		t.Fatalf("no gap event in the slow stream:\n%s", out)
	}
	inGap := func(id string) bool {
		p := posOf(t, id)
		for _, g := range gaps {
			from, to := posOf(t, g.From), posOf(t, g.To)
			if !p.Less(from) && !to.Less(p) {
				return true
			}
		}
		return false
	}
	for _, id := range ids {
		got := strings.Contains(out, "id: "+id+"\n")
		if got == inGap(id) {
			t.Fatalf("id %s: delivered=%v, inside a gap=%v (gaps %+v)", id, got, inGap(id), gaps)
		}
	}
	if n := gatherCounter(t, s.reg, "wavehouse_stream_gaps_total", "", ""); n < 1 {
		t.Fatalf("gaps metric %v", n)
	}
}

// TestSlowSubscriberDisconnect: under slow_policy disconnect the slow
// stream ends (its client resumes with Last-Event-ID) and the fast one is
// unaffected.
func TestSlowSubscriberDisconnect(t *testing.T) {
	s, q, fast, slow, done := slowSetup(t, stream.Config{Buffer: 4, SlowPolicy: stream.PolicyDisconnect})
	for i := range 20 {
		id := eid(t, q, "events", publish(t, q, "events", []any{i, "x"}))
		if ev := fast.nextRows(t); ev.ID != id {
			t.Fatalf("fast subscriber: id %s, want %s", ev.ID, id)
		}
	}
	slow.open()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the slow stream was not disconnected")
	}
	if !strings.Contains(slow.String(), "disconnected: slow subscriber") {
		t.Fatalf("no disconnect comment:\n%s", slow.String())
	}
	if n := gatherCounter(t, s.reg, "wavehouse_stream_disconnects_total", "reason", "slow"); n != 1 {
		t.Fatalf("slow disconnects metric %v, want 1", n)
	}
}
