package writer

import (
	"context"
	"sync"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// forgetQueue holds plans whose frames are acknowledged until ForgetDelay has passed. A plan is
// not forgotten at once because an acknowledgement the queue server confirmed can still be lost:
// nats-server writes consumer state to disk asynchronously (at most every 100 ms), so when the
// server is killed (the embedded queue dies with the process) the frames of the last moments'
// acks are delivered again — and must then find their plan, marked inserted, to be acknowledged
// without a second insert.
type forgetQueue struct {
	mu      sync.Mutex
	pending []pendingForget
}

type pendingForget struct {
	plan mq.BatchPlan
	due  time.Time
}

// forgetLater schedules p to be forgotten ForgetDelay from now.
func (w *Writer) forgetLater(p mq.BatchPlan) {
	if w.journal == nil {
		return
	}
	w.forgets.mu.Lock()
	w.forgets.pending = append(w.forgets.pending, pendingForget{plan: p, due: w.deps.Now().Add(w.cfg.ForgetDelay)})
	w.forgets.mu.Unlock()
}

// due removes and returns the plans due at now (they were queued in due order).
func (f *forgetQueue) due(now time.Time) []mq.BatchPlan {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for n < len(f.pending) && !now.Before(f.pending[n].due) {
		n++
	}
	out := make([]mq.BatchPlan, n)
	for i := range out {
		out[i] = f.pending[i].plan
	}
	f.pending = append(f.pending[:0:0], f.pending[n:]...)
	return out
}

// forgetLoop forgets due plans until ctx ends; plans still pending then stay in the journal
// until its retention removes them (a restarted writer recognises their frames, which are
// acknowledged, so they are never delivered again unless their acks were lost).
func (w *Writer) forgetLoop(ctx context.Context) {
	if w.journal == nil {
		return
	}
	t := time.NewTicker(max(w.cfg.ForgetDelay/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range w.forgets.due(w.deps.Now()) {
			_ = w.journal.Forget(ctx, p)
		}
	}
}
