package mqtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// testTrimToFit fills a small partition stream past half its bound with frames of one known
// size and trims it to half in the three situations that decide how far it may go: nothing
// acknowledged (nothing goes), part acknowledged (exactly the acknowledged frames go, the
// stream stays over the share, every unacknowledged frame is still delivered, and a replay from a
// trimmed position starts with a reset), everything acknowledged but keep.All binding (only the
// frames stored before it go), and keep.Keyed binding with a keyed frame among the younger
// frames (the frames before it go, young or not; it and every frame after it stay, as a
// resolution reads them). Last, with nothing holding it back, it trims to the share: half the
// bound can be published again without mq.ErrQueueFull.
func testTrimToFit(t *testing.T, nh NewHarness, _ Caps) {
	const (
		bound   = 256 << 10
		share   = 0.5
		size    = 4 << 10                    // payload of each frame; a stored frame is a little larger
		n       = 48                         // about 80% of the bound
		older   = 14                         // frames stored before keepAfter
		young   = 2                          // unkeyed frames stored after keepAfter, before the keyed one
		acked   = 10                         // frames acknowledged first
		slack   = 1 << 10                    // more than a frame's headers and encoding take
		fitting = bound / 2 / (size + slack) // frames that surely fit in half the bound
	)
	q := nh(t, Options{Partitions: 1, MaxBytes: bound}).Queue
	payload := make([]byte, size)
	var pos []mq.Position
	var keepAfter time.Time
	for i := range n {
		if i == older {
			// Frames 0..older-1 were stored before this instant (their publish returned), the
			// rest after it (their publish starts later).
			keepAfter = time.Now()
		}
		r := mq.Record{Tenant: "t", Table: "fit", Payload: payload}
		if i == older+young {
			// A claimed record: its frame carries a message id, which a retry of its request
			// resolves by reading the frame back (docs/adr/0012).
			r = claimed("fit", "keyed", &marker{}, "")
			r.Payload = payload
		}
		pos = append(pos, publish(t, q, r).Position)
	}
	trim := func(keep mq.FitKeep) uint64 {
		t.Helper()
		removed, err := q.TrimToFit(ctxT(t), 0, share, keep)
		if err != nil {
			t.Fatalf("trim to fit: %v", err)
		}
		return removed
	}
	retained := func() uint64 {
		t.Helper()
		st, err := q.Stats(ctxT(t), "t", "fit")
		if err != nil {
			t.Fatalf("stats: %v", err)
		}
		return st.Retained
	}
	for _, bad := range []float64{0, -0.5, 1.5} {
		if _, err := q.TrimToFit(ctxT(t), 0, bad, mq.FitKeep{}); !errors.Is(err, mq.ErrInvalid) {
			t.Fatalf("trim to fit a share of %v: %v, want mq.ErrInvalid", bad, err)
		}
	}

	// Nothing acknowledged: the stream is over the share, and nothing may go.
	if removed := trim(mq.FitKeep{}); removed != 0 || retained() != n {
		t.Fatalf("with nothing acknowledged: removed %d, %d retained; want 0 and %d", removed, retained(), n)
	}

	// The first frames acknowledged: exactly those go, although the stream stays over the share.
	s := subscribe(t, q, "t", "fit")
	for _, d := range fetchN(t, s, acked, 10*time.Second) {
		if err := d.Ack(ctxT(t)); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
	if removed := trim(mq.FitKeep{}); removed != acked || retained() != n-acked {
		t.Fatalf("with %d frames acknowledged: removed %d, %d retained; want %d and %d", acked, removed, retained(), acked, n-acked)
	}
	// A replay from a position trimmed to fit starts with a reset to the first retained frame (on
	// SSE: event: reset, reason trimmed), as after an age trim.
	ctx, cancel := context.WithCancel(ctxT(t))
	c := &collector{events: make(chan mq.Event, n)}
	done := make(chan error, 1)
	go func() { done <- q.Replay(ctx, "t", "fit", mq.Cursor{After: pos[0]}, c.fn) }()
	e := c.next(t, 10*time.Second)
	cancel()
	<-done
	if e.Reset == nil || e.Reset.Reason != mq.ResetTrimmed || e.Reset.First.Seq != pos[acked].Seq {
		t.Fatalf("replay from a frame trimmed to fit: first event %+v, want a reset (trimmed) to %v", e, pos[acked])
	}
	rest := fetchN(t, s, n-acked, 10*time.Second)
	for i, d := range rest {
		if d.Meta().Seq != pos[acked+i].Seq {
			t.Fatalf("after the trim delivered frame %d, want %d: an unacknowledged frame was removed", d.Meta().Seq, pos[acked+i].Seq)
		}
		if err := d.Ack(ctxT(t)); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}

	// Everything acknowledged, but every frame stored since keepAfter kept: only the older ones go.
	if removed := trim(mq.FitKeep{All: keepAfter}); removed != older-acked || retained() != n-older {
		t.Fatalf("with keep.All: removed %d, %d retained; want %d and %d", removed, retained(), older-acked, n-older)
	}
	// The frames from the first keyed one stored since keepAfter kept: the young unkeyed frames
	// before it go too; the keyed frame and all after it stay.
	if removed := trim(mq.FitKeep{Keyed: keepAfter}); removed != young || retained() != n-older-young {
		t.Fatalf("with keep.Keyed: removed %d, %d retained; want %d and %d (up to the keyed frame)", removed, retained(), young, n-older-young)
	}

	// Nothing holds it back: the stream is trimmed to the share, not emptied.
	if removed := trim(mq.FitKeep{}); removed == 0 {
		t.Fatal("with every frame acknowledged and no keepAfter: nothing removed from a stream over its share")
	}
	if r := retained(); r*size > bound/2 || r < fitting-1 {
		t.Fatalf("after trimming to fit %d frames of %d bytes are retained, want at most %d bytes and at least %d frames",
			r, size, bound/2, fitting-1)
	}
	if removed := trim(mq.FitKeep{}); removed != 0 {
		t.Fatalf("a stream within its share trimmed again: %d removed", removed)
	}
	// Half the bound is free again.
	for i := range fitting {
		if _, err := q.Publish(ctxT(t), mq.Record{Tenant: "t", Table: "fit", Payload: payload}); err != nil {
			t.Fatalf("publish %d of %d frames into the half the trim freed: %v", i+1, fitting, err)
		}
	}
}
