package sweeper

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/wavehouse/wavehouse/internal/coord/localcoord"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

func openQueue(t *testing.T) *embeddedmq.Queue {
	t.Helper()
	return openQueueWith(t, embeddedmq.Config{Partitions: 1})
}

// openQueueWith opens an embedded queue of cfg in a directory of the test, closed when it ends.
func openQueueWith(t *testing.T, cfg embeddedmq.Config) *embeddedmq.Queue {
	t.Helper()
	cfg.Dir = t.TempDir()
	q, err := embeddedmq.New(cfg, embeddedmq.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	return q
}

// newCoord returns a local coordinator closed when the test ends.
func newCoord(t *testing.T, cfg localcoord.Config, deps localcoord.Deps) *localcoord.Coordinator {
	t.Helper()
	c, err := localcoord.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// ackFrames subscribes to partition 0, fetches the first n frames and acknowledges them; the
// subscription is closed when the test ends.
func ackFrames(t *testing.T, q *embeddedmq.Queue, n int) mq.Subscription {
	t.Helper()
	sub, err := q.Subscribe(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	ds, err := sub.Fetch(t.Context(), n, 5*time.Second)
	if err != nil || len(ds) != n {
		t.Fatalf("fetched %d frames, err %v; want %d", len(ds), err, n)
	}
	for _, d := range ds {
		if err := d.Ack(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	return sub
}

// TestSweepTrimsOnlyBelowTheAckFloor publishes frames, acknowledges the first half, and sweeps
// with a window that has expired for all of them: the acknowledged half goes, the rest stays and
// is still delivered.
func TestSweepTrimsOnlyBelowTheAckFloor(t *testing.T) {
	q := openQueue(t)
	for i := range 10 {
		if _, err := q.Publish(t.Context(), mq.Record{Tenant: "t", Table: "e", Payload: []byte{byte('a' + i)}}); err != nil {
			t.Fatal(err)
		}
	}
	sub := ackFrames(t, q, 5)
	c := newCoord(t, localcoord.Config{Lease: time.Second}, localcoord.Deps{Instance: "i1"})
	reg := prometheus.NewRegistry()
	s, err := New(Config{Interval: time.Hour, HistoryWindow: time.Nanosecond},
		Deps{Coord: c, Queue: q, Registerer: reg, Now: func() time.Time { return time.Now().Add(time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	s.Sweep(t.Context())
	if n := value(t, s.m.trimmed.WithLabelValues(reasonAge)); n != 5 {
		t.Fatalf("trimmed %v frames, want the 5 acknowledged ones", n)
	}
	st, err := q.Stats(t.Context(), "t", "e")
	if err != nil {
		t.Fatal(err)
	}
	if st.Retained != 5 || st.Pending != 5 {
		t.Fatalf("after sweep: retained %d pending %d, want 5 and 5", st.Retained, st.Pending)
	}
	var rest []string
	for len(rest) < 5 {
		ds, err := sub.Fetch(t.Context(), 10, 2*time.Second)
		if err != nil || len(ds) == 0 {
			t.Fatalf("unacknowledged frames not delivered after the sweep: got %v, err %v", rest, err)
		}
		for _, d := range ds {
			rest = append(rest, string(d.Records()[0].Payload))
			_ = d.Ack(t.Context())
		}
	}
	if got := strings.Join(rest, ""); got != "fghij" {
		t.Fatalf("delivered %q after the sweep, want fghij", got)
	}
}

func TestRunHoldsTheLeaseAndReportsIt(t *testing.T) {
	q := openQueue(t)
	c := newCoord(t, localcoord.Config{Lease: time.Second}, localcoord.Deps{Instance: "i1"})
	s, err := New(Config{Interval: 10 * time.Millisecond, HistoryWindow: time.Hour}, Deps{Coord: c, Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	poll.Until(t, 10*time.Second, "the sweeper holding the lease and sweeping twice", func() bool {
		return value(t, s.m.holding) == 1 && value(t, s.m.runs.WithLabelValues("ok").(prometheus.Metric)) >= 2
	})
	if tok := value(t, s.m.token); tok < 1 {
		t.Fatalf("token gauge %v", tok)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if value(t, s.m.holding) != 0 {
		t.Fatal("still reports holding after it stopped")
	}
	if _, err := New(Config{}, Deps{Coord: c, Queue: q}); err == nil {
		t.Fatal("zero interval accepted")
	}
}

// value reads a counter or gauge.
func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

func TestSweepExpiresDeadLettersPastRetentionOnly(t *testing.T) {
	q := openQueue(t)
	if _, err := q.Publish(t.Context(), mq.Record{Tenant: "t", Table: "e", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	sub, err := q.Subscribe(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ds, err := sub.Fetch(t.Context(), 1, time.Second)
	if err != nil || len(ds) != 1 {
		t.Fatalf("fetch: %d %v", len(ds), err)
	}
	if err := ds[0].(mq.DeadLetterer).DeadLetter(t.Context(), mq.Reason{Code: "rejected", Message: "test"}); err != nil {
		t.Fatal(err)
	}
	c := newCoord(t, localcoord.Config{}, localcoord.Deps{})
	dlq := q.DLQ().(mq.DeadLetterExpirer)
	count := func() uint64 {
		n, err := q.DLQ().Counts(t.Context(), "t")
		if err != nil {
			t.Fatal(err)
		}
		return n[mq.TableKey{Tenant: "t", Table: "e"}]
	}
	// Within its retention the entry stays.
	kept, err := New(Config{Interval: time.Hour, HistoryWindow: time.Hour, DLQRetention: time.Hour}, Deps{Coord: c, Queue: q, DLQ: dlq})
	if err != nil {
		t.Fatal(err)
	}
	kept.Sweep(t.Context())
	if count() != 1 || value(t, kept.m.expired) != 0 {
		t.Fatalf("entry within retention removed: count %d", count())
	}
	// Past it, it goes.
	gone, err := New(Config{Interval: time.Hour, HistoryWindow: time.Hour, DLQRetention: time.Minute},
		Deps{Coord: c, Queue: q, DLQ: dlq, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	gone.Sweep(t.Context())
	if count() != 0 || value(t, gone.m.expired) != 1 {
		t.Fatalf("entry past retention kept: count %d, expired %v", count(), value(t, gone.m.expired))
	}
}

// TestSweepCompactsJournalPastGraceOnly: a batch plan whose frame is acknowledged but whose Forget
// was lost is removed by the sweep once it is older than JournalGrace, not before.
func TestSweepCompactsJournalPastGraceOnly(t *testing.T) {
	q := openQueue(t)
	res, err := q.Publish(t.Context(), mq.Record{Tenant: "t", Table: "j", Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	frames := []mq.FrameRef{{Partition: 0, Seq: res.Position.Seq}} // one partition
	plan := mq.BatchPlan{ID: mq.PlanID(frames), Tenant: "t", Table: "j", Frames: frames}
	if err := q.Plan(t.Context(), plan); err != nil {
		t.Fatal(err)
	}
	sub, err := q.Subscribe(t.Context(), frames[0].Partition)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ds, err := sub.Fetch(t.Context(), 1, 5*time.Second)
	if err != nil || len(ds) != 1 {
		t.Fatalf("fetch: %d %v", len(ds), err)
	}
	if err := ds[0].Ack(t.Context()); err != nil {
		t.Fatal(err)
	}
	c := newCoord(t, localcoord.Config{}, localcoord.Deps{})
	planned := func() bool {
		got, err := q.Lookup(t.Context(), "t", "j", frames, time.Now().Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return got[frames[0]].ID == plan.ID
	}
	for _, tc := range []struct {
		after time.Duration
		kept  bool
	}{{0, true}, {JournalGrace + time.Minute, false}} {
		s, err := New(Config{Interval: time.Hour, HistoryWindow: time.Hour},
			Deps{Coord: c, Queue: q, Journal: q, Now: func() time.Time { return time.Now().Add(tc.after) }})
		if err != nil {
			t.Fatal(err)
		}
		s.Sweep(t.Context())
		if planned() != tc.kept || value(t, s.m.compacted) != map[bool]float64{true: 0, false: 1}[tc.kept] {
			t.Fatalf("sweep %s later: plan kept %v (want %v), compacted %v", tc.after, planned(), tc.kept, value(t, s.m.compacted))
		}
	}
}

// frameMarker is an mq.FrameMarker that marks every claim and remembers the last frame id.
type frameMarker struct{ frame string }

func (m *frameMarker) MarkFrame(_ context.Context, frame string, _ time.Time, refs []any) []error {
	m.frame = frame
	return make([]error, len(refs))
}

// TestSweepKeepsFramesAMarkCanResolve: a keyed request's frame is inserted and acknowledged,
// its idempotency record is not committed (the dedupe store was down), and its retry comes
// once the lease lapsed, after the history window: the sweep must not have trimmed the frame,
// or the retry cannot read it back to learn it is already queued (503 until the mark ends,
// then its rows are enqueued a second time: TestChaosSplit/restart_dynalite). Past the
// duplicate window the frame is trimmed as usual.
func TestSweepKeepsFramesAMarkCanResolve(t *testing.T) {
	q := openQueue(t)
	m := &frameMarker{}
	keyed := func(prior string) mq.Record {
		return mq.Record{Tenant: "t", Table: "k", Payload: []byte("rows"), IdempotencyKey: "req-1",
			Claim: &mq.Claim{Marker: m, Ref: "req-1", Prior: prior}}
	}
	first, err := q.Publish(t.Context(), keyed(""))
	if err != nil {
		t.Fatal(err)
	}
	ackFrames(t, q, 1)
	c := newCoord(t, localcoord.Config{Lease: time.Second}, localcoord.Deps{Instance: "i1"})
	const window = 2 * time.Minute
	sweepAt := func(after time.Duration) float64 {
		s, err := New(Config{Interval: time.Hour, HistoryWindow: time.Nanosecond, ResolveWindow: window},
			Deps{Coord: c, Queue: q, Registerer: prometheus.NewRegistry(), Now: func() time.Time { return time.Now().Add(after) }})
		if err != nil {
			t.Fatal(err)
		}
		s.Sweep(t.Context())
		return value(t, s.m.trimmed.WithLabelValues(reasonAge))
	}
	trimmed := sweepAt(window / 2)
	again, err := q.Publish(t.Context(), keyed(m.frame))
	if err != nil || !again.Duplicate || again.Position != first.Position {
		t.Fatalf("retry resolving its frame after a sweep = %+v, %v; want a duplicate of %v", again, err, first.Position)
	}
	if trimmed != 0 {
		t.Fatalf("a sweep within the duplicate window trimmed %v frames, want 0", trimmed)
	}
	if n := sweepAt(window + time.Minute); n != 1 {
		t.Fatalf("a sweep past the duplicate window trimmed %v frames, want 1", n)
	}
}
