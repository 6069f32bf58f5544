package jsmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// journalIndex is this process's view of the journal bucket: every plan not forgotten, by the
// frames it holds. A KV watcher keeps it current; Lookup first waits until the watcher has
// applied everything the bucket held when Lookup was called (a barrier on the bucket stream's
// last sequence), so a plan recorded by any process before the call is always found.
//
// Lookup consults it for every frame of a batch, not only for frames the server reports as
// redelivered: the delivery count lives in the consumer's state, which nats-server writes to
// disk asynchronously (about every 100 ms), so after a crash of the server a frame that was
// delivered, planned and inserted can come back with a delivery count of 1.
type journalIndex struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever rev or ready changes
	ready   bool          // the watcher delivered the bucket's initial values
	rev     uint64        // every bucket message up to rev has been applied
	plans   map[string]journalEntry
	byFrame map[mq.FrameRef][]string // plan keys holding the frame
}

func newJournalIndex() *journalIndex {
	return &journalIndex{changed: make(chan struct{}), plans: map[string]journalEntry{}, byFrame: map[mq.FrameRef][]string{}}
}

func (x *journalIndex) notifyLocked() {
	close(x.changed)
	x.changed = make(chan struct{})
}

// reset forgets everything (a new watcher starts from the bucket's current values).
func (x *journalIndex) reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.ready, x.rev = false, 0
	x.plans = map[string]journalEntry{}
	x.byFrame = map[mq.FrameRef][]string{}
	x.notifyLocked()
}

// apply records one bucket message.
func (x *journalIndex) apply(key string, rev uint64, op jetstream.KeyValueOp, value []byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(key)
	if op == jetstream.KeyValuePut {
		if e, err := decodePlan(key[strings.LastIndexByte(key, '.')+1:], value); err == nil {
			e.plan.Revision = rev
			x.plans[key] = e
			for _, f := range e.plan.Frames {
				x.byFrame[f] = append(x.byFrame[f], key)
			}
		}
	}
	if rev > x.rev {
		x.rev = rev
		x.notifyLocked()
	}
}

func (x *journalIndex) removeLocked(key string) {
	old, ok := x.plans[key]
	if !ok {
		return
	}
	delete(x.plans, key)
	for _, f := range old.plan.Frames {
		keys := x.byFrame[f]
		for i, k := range keys {
			if k == key {
				keys = append(keys[:i], keys[i+1:]...)
				break
			}
		}
		if len(keys) == 0 {
			delete(x.byFrame, f)
		} else {
			x.byFrame[f] = keys
		}
	}
}

// initialDone marks the initial values applied: every message up to last (the bucket's last
// sequence read before the watcher was created) is reflected, even when the newest of them was
// a delete marker that the watcher's initial pass skips.
func (x *journalIndex) initialDone(last uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.ready = true
	x.rev = max(x.rev, last)
	x.notifyLocked()
}

// wait blocks until the index is ready and reflects every message up to rev.
func (x *journalIndex) wait(ctx context.Context, rev uint64) error {
	for {
		x.mu.Lock()
		ok, ch := x.ready && x.rev >= rev, x.changed
		x.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// find returns the latest plan of tenant/table holding each of frames.
func (x *journalIndex) find(tenant, table string, frames []mq.FrameRef) map[mq.FrameRef]mq.BatchPlan {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := map[mq.FrameRef]mq.BatchPlan{}
	for _, f := range frames {
		var best journalEntry
		found := false
		for _, k := range x.byFrame[f] {
			e := x.plans[k]
			if e.plan.Tenant != tenant || e.plan.Table != table {
				continue
			}
			if !found || e.plannedAt >= best.plannedAt {
				best, found = e, true
			}
		}
		if found {
			out[f] = best.plan
		}
	}
	return out
}

// size returns the number of plans held (for metrics and tests).
func (x *journalIndex) size() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.plans)
}

// journalIndexFor returns the queue's journal index, starting its watcher on first use; the
// watcher runs until the queue closes.
func (q *Queue) journalIndexFor(ctx context.Context) (*journalIndex, jetstream.KeyValue, error) {
	kv, err := q.journal(ctx)
	if err != nil {
		return nil, nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, nil, mq.ErrClosed
	}
	if q.jindex == nil {
		q.jindex = newJournalIndex()
		go q.watchJournal(kv, q.jindex)
	}
	return q.jindex, kv, nil
}

// journalLastSeq returns the last sequence of the journal bucket's stream.
func (q *Queue) journalLastSeq(ctx context.Context, kv jetstream.KeyValue) (uint64, error) {
	var last uint64
	err := q.rpc(ctx, func(ctx context.Context) error {
		st, err := kv.Status(ctx)
		if err != nil {
			return err
		}
		bs, ok := st.(*jetstream.KeyValueBucketStatus)
		if !ok {
			return fmt.Errorf("%w: unexpected key-value status %T", mq.ErrUnavailable, st)
		}
		last = bs.StreamInfo().State.LastSeq
		return nil
	})
	return last, err
}

// watchJournal feeds x from a watcher on the whole bucket until the queue closes, starting a new
// watcher (and a fresh index) whenever one ends.
func (q *Queue) watchJournal(kv jetstream.KeyValue, x *journalIndex) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-q.closeCh
		cancel()
	}()
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(min(time.Duration(attempt)*100*time.Millisecond, 2*time.Second))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			x.reset()
		}
		if err := q.watchJournalOnce(ctx, kv, x); err == nil {
			attempt = 0
		}
	}
}

func (q *Queue) watchJournalOnce(ctx context.Context, kv jetstream.KeyValue, x *journalIndex) error {
	sctx, cancel := context.WithTimeout(ctx, q.opts.PublishTimeout)
	last, err := q.journalLastSeq(sctx, kv)
	cancel()
	if err != nil {
		return err
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("journal watcher ended")
			}
			if e == nil {
				x.initialDone(last)
				continue
			}
			x.apply(e.Key(), e.Revision(), e.Operation(), e.Value())
		}
	}
}
