package mqtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// collector gathers replay events and signals each arrival.
type collector struct {
	events chan mq.Event
}

func (c *collector) fn(e mq.Event) error {
	c.events <- e
	return nil
}

func (c *collector) next(t *testing.T, within time.Duration) mq.Event {
	t.Helper()
	select {
	case e := <-c.events:
		return e
	case <-time.After(within):
		t.Fatalf("no replay event within %v", within)
		return mq.Event{}
	}
}

func testReplay(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{}).Queue
	var pos []mq.Position
	for i := 0; i < 10; i++ {
		pos = append(pos, publish(t, q, rec("t", "replay", i)).Position)
		publish(t, q, rec("t", "other", i)) // interleaved other table
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	c := &collector{events: make(chan mq.Event, 100)}
	done := make(chan error, 1)
	go func() { done <- q.Replay(ctx, "t", "replay", mq.Cursor{After: pos[3]}, c.fn) }()
	for i := 4; i < 10; i++ {
		e := c.next(t, 10*time.Second)
		if e.Record == nil || e.Record.Position != pos[i] || string(e.Record.Payload) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Fatalf("event %d: %+v, want record %d at %v", i, e, i, pos[i])
		}
	}
	// Live continuation.
	live := publish(t, q, rec("t", "replay", 10)).Position
	e := c.next(t, 10*time.Second)
	if e.Record == nil || e.Record.Position != live {
		t.Fatalf("live event %+v, want %v", e, live)
	}
	select {
	case e := <-c.events:
		t.Fatalf("unexpected extra event %+v", e)
	default:
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("replay returned %v after ctx end, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("replay did not stop at ctx end")
	}

	// Latest: only new records.
	ctx2, cancel2 := context.WithCancel(ctxT(t))
	defer cancel2()
	c2 := &collector{events: make(chan mq.Event, 10)}
	started := make(chan error, 1)
	go func() { started <- q.Replay(ctx2, "t", "replay", mq.Cursor{After: mq.Latest}, c2.fn) }()
	// The reader may attach after a publish; publish until one arrives
	// and check nothing older ever does.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		p := publish(t, q, rec("t", "replay", 99)).Position
		select {
		case e := <-c2.events:
			if e.Record == nil || e.Record.Position.Less(live) || !live.Less(e.Record.Position) || e.Record.Position.Seq > p.Seq {
				t.Fatalf("latest replay got %+v, want a record after %v", e, live)
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatal("latest replay delivered nothing")
}

func testReplayReset(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{Partitions: 1}).Queue
	var pos []mq.Position
	for i := 0; i < 6; i++ {
		pos = append(pos, publish(t, q, rec("t", "reset", i)).Position)
	}
	s := subscribe(t, q, "t", "reset")
	fetchRecords(t, s, 6, 10*time.Second)
	if _, err := q.Trim(ctxT(t), 0, pos[4].Seq, time.Time{}); err != nil {
		t.Fatalf("trim: %v", err)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	c := &collector{events: make(chan mq.Event, 10)}
	go func() { _ = q.Replay(ctx, "t", "reset", mq.Cursor{After: pos[1]}, c.fn) }()
	e := c.next(t, 10*time.Second)
	if r := e.Reset; r == nil || r.Reason != mq.ResetTrimmed || r.Requested != pos[1] || r.First.Seq != pos[4].Seq ||
		r.After != (mq.Position{Seq: pos[4].Seq - 1, Index: ^uint32(0)}) {
		t.Fatalf("first event %+v, want reset (trimmed) from %v to %v", e.Reset, pos[1], pos[4])
	}
	for _, want := range pos[4:] {
		e := c.next(t, 10*time.Second)
		if e.Record == nil || e.Record.Position != want {
			t.Fatalf("event %+v, want record at %v", e, want)
		}
	}
	// A position still retained gives no reset.
	ctx2, cancel2 := context.WithCancel(ctxT(t))
	defer cancel2()
	c2 := &collector{events: make(chan mq.Event, 10)}
	go func() { _ = q.Replay(ctx2, "t", "reset", mq.Cursor{After: pos[4]}, c2.fn) }()
	if e := c2.next(t, 10*time.Second); e.Record == nil || e.Record.Position != pos[5] {
		t.Fatalf("event %+v, want record at %v", e, pos[5])
	}
}
