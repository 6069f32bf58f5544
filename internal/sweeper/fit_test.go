package sweeper

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/coord/localcoord"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// Frames of the fit tests: fitFrames frames of fitFrame payload bytes fill about 80% of a
// fitBound stream, well over FitShare.
const (
	fitBound  = 256 << 10
	fitFrame  = 4 << 10
	fitFrames = 48
)

// openBoundedQueue opens a one-partition embedded queue whose stream holds fitBound bytes.
func openBoundedQueue(t *testing.T) *embeddedmq.Queue {
	t.Helper()
	return openQueueWith(t, embeddedmq.Config{Partitions: 1, MaxBytes: fitBound, TenantMaxBytes: -1})
}

// fill publishes n frames of fitFrame bytes to t/e.
func fill(t *testing.T, q *embeddedmq.Queue, n int) {
	t.Helper()
	payload := make([]byte, fitFrame)
	for range n {
		if _, err := q.Publish(t.Context(), mq.Record{Tenant: "t", Table: "e", Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
}

// ack fetches and acknowledges the next n frames of sub, in order.
func ack(t *testing.T, sub mq.Subscription, n int) {
	t.Helper()
	for n > 0 {
		ds, err := sub.Fetch(t.Context(), n, 5*time.Second)
		if err != nil || len(ds) == 0 {
			t.Fatalf("fetch: %d frames, %v; want %d more", len(ds), err, n)
		}
		for _, d := range ds {
			if err := d.Ack(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		n -= len(ds)
	}
}

// stats returns the queue statistics of t/e.
func stats(t *testing.T, q *embeddedmq.Queue) mq.Stats {
	t.Helper()
	st, err := q.Stats(t.Context(), "t", "e")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSweepTrimsAStreamOverHalfItsBound: a stream at 80% of its bound, its first frame a keyed
// request's, all but its last frames inserted, all within the history window. A sweep keeping a
// resolve window trims nothing (every frame is younger, and a keyed frame comes first), nor does
// one keeping a minimum history; a sweep without either trims the oldest acknowledged frames by size until the stream holds at most half
// its bound, and the unacknowledged frames stay and are delivered.
func TestSweepTrimsAStreamOverHalfItsBound(t *testing.T) {
	q := openBoundedQueue(t)
	if _, err := q.Publish(t.Context(), mq.Record{Tenant: "t", Table: "e", Payload: make([]byte, fitFrame), IdempotencyKey: "k1"}); err != nil {
		t.Fatal(err)
	}
	fill(t, q, fitFrames-1)
	sub, err := q.Subscribe(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	const unacked = 5
	ack(t, sub, fitFrames-unacked)
	c := newCoord(t, localcoord.Config{Lease: time.Second}, localcoord.Deps{Instance: "i1"})
	sweeper := func(resolve, minHistory time.Duration) *Sweeper {
		s, err := New(Config{Interval: time.Hour, HistoryWindow: time.Hour, ResolveWindow: resolve, MinHistory: minHistory},
			Deps{Coord: c, Queue: q, Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	for _, k := range []struct {
		name                string
		resolve, minHistory time.Duration
	}{{"a resolve window of an hour (the first frame keyed)", time.Hour, 0}, {"an hour of minimum history", 0, time.Hour}} {
		kept := sweeper(k.resolve, k.minHistory)
		kept.Sweep(t.Context())
		if n := value(t, kept.m.trimmed.WithLabelValues(reasonSize)); n != 0 || stats(t, q).Retained != fitFrames {
			t.Fatalf("a sweep keeping %s trimmed %v by size, %d retained; want 0 and %d", k.name, n, stats(t, q).Retained, fitFrames)
		}
	}

	s := sweeper(0, 0)
	s.Sweep(t.Context())
	st := stats(t, q)
	if age := value(t, s.m.trimmed.WithLabelValues(reasonAge)); age != 0 {
		t.Fatalf("trimmed %v frames by age within the history window", age)
	}
	if n := value(t, s.m.trimmed.WithLabelValues(reasonSize)); n == 0 || uint64(n)+st.Retained != fitFrames {
		t.Fatalf("trimmed %v frames by size, %d retained; want some trimmed and the rest retained (%d)", n, st.Retained, fitFrames)
	}
	if st.Retained*fitFrame > fitBound*FitShare || st.Pending != unacked {
		t.Fatalf("after the sweep %d frames of %d bytes retained, %d pending; want at most %d bytes and %d pending",
			st.Retained, fitFrame, st.Pending, fitBound/2, unacked)
	}
	ack(t, sub, unacked)
}

// TestRunTrimsToFitBetweenSweeps: with an hour between sweeps, a stream filled past half its
// bound after the first sweep is trimmed by the fit check alone, with no second sweep; and the
// fit check's default period is the sweep interval, at most DefaultFitEvery.
func TestRunTrimsToFitBetweenSweeps(t *testing.T) {
	q := openBoundedQueue(t)
	sub, err := q.Subscribe(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	c := newCoord(t, localcoord.Config{Lease: time.Second}, localcoord.Deps{Instance: "i1"})
	s, err := New(Config{Interval: time.Hour, HistoryWindow: time.Hour, FitEvery: 10 * time.Millisecond}, Deps{Coord: c, Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	sweeps := func() float64 { return value(t, s.m.runs.WithLabelValues("ok").(prometheus.Metric)) }
	poll.Until(t, 10*time.Second, "the first sweep", func() bool { return sweeps() == 1 })
	fill(t, q, fitFrames)
	ack(t, sub, fitFrames)
	poll.Until(t, 10*time.Second, "the stream trimmed to half its bound", func() bool {
		return stats(t, q).Retained*fitFrame <= fitBound*FitShare
	})
	if n := value(t, s.m.trimmed.WithLabelValues(reasonSize)); n == 0 || sweeps() != 1 {
		t.Fatalf("trimmed %v frames by size over %v sweeps; want the fit check alone to trim", n, sweeps())
	}

	for _, tc := range []struct{ interval, want time.Duration }{{time.Minute, DefaultFitEvery}, {time.Second, time.Second}} {
		s, err := New(Config{Interval: tc.interval, HistoryWindow: time.Hour}, Deps{Coord: c, Queue: q})
		if err != nil {
			t.Fatal(err)
		}
		if s.cfg.FitEvery != tc.want {
			t.Errorf("interval %v: fit check every %v, want %v", tc.interval, s.cfg.FitEvery, tc.want)
		}
	}
}
