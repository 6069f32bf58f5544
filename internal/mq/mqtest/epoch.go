package mqtest

import (
	"context"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// testReplayEpoch: every event names the history's epoch; a cursor of another epoch gets a
// ResetEpoch and then every retained record; a cursor past the head gets a ResetAhead and then
// only new records; a cursor of the current epoch inside the history resumes exactly after it.
func testReplayEpoch(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{Partitions: 1}).Queue
	var pos []mq.Position
	for i := 0; i < 3; i++ {
		pos = append(pos, publish(t, q, rec("t", "epoch", i)).Position)
	}
	replay := func(from mq.Cursor) *collector {
		ctx, cancel := context.WithCancel(ctxT(t))
		t.Cleanup(cancel)
		c := &collector{events: make(chan mq.Event, 10)}
		go func() { _ = q.Replay(ctx, "t", "epoch", from, c.fn) }()
		return c
	}
	first := replay(mq.Cursor{}).next(t, 10*time.Second)
	epoch := first.Epoch
	if first.Record == nil || first.Record.Position != pos[0] || epoch == "" {
		t.Fatalf("first event %+v, want record %v with an epoch", first, pos[0])
	}

	c := replay(mq.Cursor{Epoch: epoch, After: pos[0]})
	if e := c.next(t, 10*time.Second); e.Record == nil || e.Record.Position != pos[1] || e.Epoch != epoch {
		t.Fatalf("same epoch: event %+v, want record %v of epoch %s", e, pos[1], epoch)
	}

	c = replay(mq.Cursor{Epoch: "other", After: pos[1]})
	e := c.next(t, 10*time.Second)
	if r := e.Reset; r == nil || r.Reason != mq.ResetEpoch || r.Requested != pos[1] || e.Epoch != epoch || r.After.Seq >= pos[0].Seq {
		t.Fatalf("other epoch: first event %+v (reset %+v), want a reset (epoch) before %v", e, e.Reset, pos[0])
	}
	for _, want := range pos {
		if e := c.next(t, 10*time.Second); e.Record == nil || e.Record.Position != want {
			t.Fatalf("after the epoch reset: event %+v, want record %v", e, want)
		}
	}

	ahead := mq.Position{Seq: pos[2].Seq + 100}
	c = replay(mq.Cursor{Epoch: epoch, After: ahead})
	e = c.next(t, 10*time.Second)
	if r := e.Reset; r == nil || r.Reason != mq.ResetAhead || r.Requested != ahead || r.After.Seq != pos[2].Seq {
		t.Fatalf("ahead: first event %+v (reset %+v), want a reset (ahead) continuing after %v", e, e.Reset, pos[2])
	}
	live := publish(t, q, rec("t", "epoch", 3)).Position
	if e := c.next(t, 10*time.Second); e.Record == nil || e.Record.Position != live {
		t.Fatalf("after the ahead reset: event %+v, want the new record %v", e, live)
	}
}
