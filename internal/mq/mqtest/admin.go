package mqtest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

func testFailedPull(t *testing.T, nh NewHarness, _ Caps) {
	h := nh(t, Options{NeedBreak: true})
	if h.Break == nil {
		t.Skip("backend cannot make its server unreachable")
	}
	q := h.Queue
	publish(t, q, rec("t", "down", 1))
	s := subscribe(t, q, "t", "down")
	h.Break(t)
	ds, err := s.Fetch(ctxT(t), 10, time.Second)
	if err == nil {
		t.Fatalf("fetch from an unreachable server returned %d deliveries and no error", len(ds))
	}
	if !errors.Is(err, mq.ErrUnavailable) {
		t.Fatalf("fetch error %v, want mq.ErrUnavailable", err)
	}
	start := time.Now()
	_, err = q.Publish(ctxT(t), rec("t", "down", 2))
	wantIs(t, err, mq.ErrUnavailable, "publish while disconnected")
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("publish while disconnected took %v, want a fast failure", el)
	}
}

func testTrim(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{Partitions: 1}).Queue
	const n = 10
	var pos []mq.Position
	for i := 0; i < n; i++ {
		pos = append(pos, publish(t, q, rec("t", "trim", i)).Position)
	}
	s := subscribe(t, q, "t", "trim")
	// Consume and ack the first half, one frame at a time.
	for i := 0; i < n/2; i++ {
		d := fetchN(t, s, 1, 10*time.Second)[0]
		if d.Meta().Seq != pos[i].Seq {
			t.Fatalf("delivered frame %d, want %d", d.Meta().Seq, pos[i].Seq)
		}
		if err := d.Ack(ctxT(t)); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
	removed, err := q.Trim(ctxT(t), 0, pos[n-1].Seq+1, time.Time{})
	if err != nil {
		t.Fatalf("trim: %v", err)
	}
	if removed != n/2 {
		t.Fatalf("trim removed %d frames, want %d (exactly the acked half)", removed, n/2)
	}
	// Age-based trim cannot cross the floor either.
	if removed, err := q.Trim(ctxT(t), 0, 0, time.Now().Add(time.Hour)); err != nil || removed != 0 {
		t.Fatalf("age trim removed %d, %v; want 0", removed, err)
	}
	got := fetchRecords(t, s, n/2, 10*time.Second)
	for i, r := range got {
		if r.Position != pos[n/2+i] {
			t.Fatalf("after trim got %v, want %v", r.Position, pos[n/2+i])
		}
	}
	// Now everything is acked: an age trim removes all but nothing newer.
	if removed, err := q.Trim(ctxT(t), 0, 0, time.Now().Add(time.Hour)); err != nil || removed != n/2 {
		t.Fatalf("final age trim removed %d, %v; want %d", removed, err, n/2)
	}
}

func testQueueFull(t *testing.T, nh NewHarness, caps Caps) {
	t.Run("Stream", func(t *testing.T) {
		q := nh(t, Options{Partitions: 1, MaxBytes: 64 << 10}).Queue
		big := make([]byte, 8<<10)
		for i := 0; i < 20; i++ {
			_, err := q.Publish(ctxT(t), mq.Record{Tenant: "t", Table: "full", Payload: big})
			if errors.Is(err, mq.ErrStreamFull) && errors.Is(err, mq.ErrQueueFull) && !errors.Is(err, mq.ErrTenantBudget) {
				return
			}
			if err != nil {
				t.Fatalf("publish %d: %v, want nil or mq.ErrStreamFull", i, err)
			}
		}
		t.Fatal("160 KiB published into a 64 KiB stream without mq.ErrStreamFull")
	})
	t.Run("Tenant", func(t *testing.T) {
		if !caps.TenantBudget {
			t.Skip("backend has no per-tenant budget")
		}
		q := nh(t, Options{TenantMaxBytes: 10 << 10}).Queue
		big := make([]byte, 6<<10)
		publish(t, q, mq.Record{Tenant: "greedy", Table: "x", Payload: big})
		_, err := q.Publish(ctxT(t), mq.Record{Tenant: "greedy", Table: "x", Payload: big})
		wantIs(t, err, mq.ErrTenantBudget, "publish over the tenant budget")
		wantIs(t, err, mq.ErrQueueFull, "publish over the tenant budget")
		if errors.Is(err, mq.ErrStreamFull) {
			t.Fatalf("publish over the tenant budget: %v names the stream's bound", err)
		}
		// Another tenant is unaffected.
		publish(t, q, mq.Record{Tenant: "other", Table: "x", Payload: big})
		// Acknowledging frees the budget.
		s := subscribe(t, q, "greedy", "x")
		fetchRecords(t, s, 1, 10*time.Second)
		publish(t, q, mq.Record{Tenant: "greedy", Table: "x", Payload: big})
	})
}

func testIdempotency(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{Partitions: 1}).Queue
	r := rec("t", "idem", 1)
	r.IdempotencyKey = "req-1"
	first := publish(t, q, r)
	if first.Duplicate {
		t.Fatal("first publish reported duplicate")
	}
	r.Payload = []byte(`{"i":2}`)
	again := publish(t, q, r)
	if !again.Duplicate || again.Position != first.Position {
		t.Fatalf("repeat: %+v, want duplicate of %v", again, first.Position)
	}
	// The same key on another tenant is a different request.
	other := r
	other.Tenant = "t2"
	other.Payload = []byte(`{"i":3}`)
	if res := publish(t, q, other); res.Duplicate {
		t.Fatal("same key of another tenant reported duplicate")
	}
	r.IdempotencyKey = "req-2"
	r.Payload = []byte(`{"i":4}`)
	publish(t, q, r)
	s := subscribe(t, q, "t", "idem")
	got := fetchRecords(t, s, 3, 10*time.Second)
	var sum []string
	for _, g := range got {
		sum = append(sum, g.Tenant+"/"+g.IdempotencyKey+"/"+string(g.Payload))
	}
	want := []string{`t/req-1/{"i":1}`, `t2/req-1/{"i":3}`, `t/req-2/{"i":4}`}
	if strings.Join(sum, " ") != strings.Join(want, " ") {
		t.Fatalf("delivered %v, want %v", sum, want)
	}
	expectNone(t, s, 500*time.Millisecond)
}

func testDeliveryEnded(t *testing.T, nh NewHarness, _ Caps) {
	t.Run("ConsumerDeleted", func(t *testing.T) {
		h := nh(t, Options{Partitions: 1})
		if h.DeleteConsumer == nil {
			t.Skip("harness cannot delete consumers")
		}
		s := subscribe(t, h.Queue, "t", "x")
		h.DeleteConsumer(t, 0)
		checkEnded(t, s)
	})
	t.Run("QueueClosed", func(t *testing.T) {
		h := nh(t, Options{Partitions: 1})
		s := subscribe(t, h.Queue, "t", "x")
		var wg sync.WaitGroup
		fetchErr := make(chan error, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-s.Done()
			_, err := s.Fetch(context.Background(), 1, 10*time.Millisecond)
			fetchErr <- err
		}()
		if err := h.Queue.Close(ctxT(t)); err != nil {
			t.Fatalf("close: %v", err)
		}
		wg.Wait()
		wantIs(t, <-fetchErr, mq.ErrDeliveryEnded, "fetch after close")
		wantIs(t, s.Err(), mq.ErrDeliveryEnded, "Err after close")
	})
}

func checkEnded(t *testing.T, s mq.Subscription) {
	t.Helper()
	if s.Err() != nil {
		t.Fatalf("Err before the end: %v", s.Err())
	}
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if _, err = s.Fetch(ctxT(t), 1, 200*time.Millisecond); err != nil {
			break
		}
	}
	wantIs(t, err, mq.ErrDeliveryEnded, "fetch after consumer deletion")
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after delivery ended")
	}
	first := s.Err()
	wantIs(t, first, mq.ErrDeliveryEnded, "Err")
	_, err = s.Fetch(ctxT(t), 1, 10*time.Millisecond)
	wantIs(t, err, mq.ErrDeliveryEnded, "second fetch")
	if s.Err() != first {
		t.Fatalf("Err changed from %v to %v: the end must be reported once", first, s.Err())
	}
}

func testStats(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{Partitions: 1}).Queue
	var pos []mq.Position
	for i := 0; i < 4; i++ {
		pos = append(pos, publish(t, q, rec("t", "stats", i)).Position)
	}
	publish(t, q, rec("t", "noise", 0))
	st, err := q.Stats(ctxT(t), "t", "stats")
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	if st.Retained != 4 || st.Pending != 4 || st.AckFloor != 0 || st.OldestUnacked <= 0 || st.DeadLetters != 0 {
		t.Fatalf("stats before consuming %+v, want retained 4 pending 4 floor 0 oldest>0 dlq 0", st)
	}
	s := subscribe(t, q, "t", "stats")
	d := fetchN(t, s, 1, 10*time.Second)[0]
	if err := d.Ack(ctxT(t)); err != nil {
		t.Fatalf("ack: %v", err)
	}
	d = fetchN(t, s, 1, 10*time.Second)[0]
	if err := d.(mq.DeadLetterer).DeadLetter(ctxT(t), mq.Reason{Code: "bad"}); err != nil {
		t.Fatalf("dead letter: %v", err)
	}
	st, err = q.Stats(ctxT(t), "t", "stats")
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	if st.Retained != 4 || st.Pending != 2 || st.AckFloor != pos[1].Seq || st.OldestUnacked <= 0 || st.DeadLetters != 1 {
		t.Fatalf("stats after 2 settled %+v, want retained 4 pending 2 floor %d dlq 1", st, pos[1].Seq)
	}
	fetchRecords(t, s, 3, 10*time.Second) // 2 of stats + noise
	st, err = q.Stats(ctxT(t), "t", "stats")
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	if st.Pending != 0 || st.OldestUnacked != 0 {
		t.Fatalf("stats after all acked %+v, want pending 0 and no oldest-unacked age", st)
	}
}

func testClosed(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{}).Queue
	publish(t, q, rec("t", "c", 1))
	if err := q.Close(ctxT(t)); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := q.Close(ctxT(t)); err != nil {
		t.Fatalf("second close: %v", err)
	}
	ctx := ctxT(t)
	_, err := q.Publish(ctx, rec("t", "c", 2))
	wantIs(t, err, mq.ErrClosed, "publish")
	_, err = q.Subscribe(ctx, 0)
	wantIs(t, err, mq.ErrClosed, "subscribe")
	_, err = q.Stats(ctx, "t", "c")
	wantIs(t, err, mq.ErrClosed, "stats")
	_, err = q.Trim(ctx, 0, 10, time.Time{})
	wantIs(t, err, mq.ErrClosed, "trim")
	_, err = q.DLQ().List(ctx, "t", "c", 0, 1)
	wantIs(t, err, mq.ErrClosed, "dlq list")
	err = q.Replay(ctx, "t", "c", mq.Cursor{}, func(mq.Event) error { return nil })
	wantIs(t, err, mq.ErrClosed, "replay")
	if !strings.HasPrefix(mq.ErrClosed.Error(), "mq: ") {
		t.Fatal("sentinel not prefixed with the layer name")
	}
}

func testFetchHonoursContext(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{Partitions: 1}).Queue
	s := subscribe(t, q, "t", "idle")
	ctx, cancel := context.WithCancel(ctxT(t))
	timer := time.AfterFunc(200*time.Millisecond, cancel)
	defer timer.Stop()
	start := time.Now()
	ds, err := s.Fetch(ctx, 10, 30*time.Second)
	if !errors.Is(err, context.Canceled) || len(ds) != 0 {
		t.Fatalf("fetch on an idle partition with a cancelled ctx: %d deliveries, %v; want context.Canceled", len(ds), err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("fetch returned %v after ctx end, want promptly", el)
	}
}
