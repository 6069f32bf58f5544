package writer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// gatedStore blocks every insert until release: a ClickHouse that does not answer.
type gatedStore struct {
	store.Inserter
	open chan struct{}
	once sync.Once
}

func (s *gatedStore) release() { s.once.Do(func() { close(s.open) }) }

func (s *gatedStore) Insert(ctx context.Context, b store.Batch) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.open:
	}
	return s.Inserter.Insert(ctx, b)
}

// boundedConsumer checks, at every pull, that the writer holds less than bound bytes from the
// partition it pulls: the invariant under test, checked where it must hold, with no timing.
type boundedConsumer struct {
	mq.Consumer
	w          atomic.Pointer[Writer]
	bound      int
	violations atomic.Int64
}

func (c *boundedConsumer) Subscribe(ctx context.Context, p int) (mq.Subscription, error) {
	sub, err := c.Consumer.Subscribe(ctx, p)
	if err != nil {
		return nil, err
	}
	return &boundedSub{Subscription: sub, c: c, p: p}, nil
}

type boundedSub struct {
	mq.Subscription
	c *boundedConsumer
	p int
}

func (s *boundedSub) Fetch(ctx context.Context, max int, wait time.Duration) ([]mq.Delivery, error) {
	if w := s.c.w.Load(); w != nil && w.held.partitionBytes(s.p) >= s.c.bound {
		s.c.violations.Add(1)
	}
	return s.Subscription.Fetch(ctx, max, wait)
}

func (h *heldFrames) partitionBytes(p int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bytes[p]
}

// TestHeldBytesAreBoundedByDefault: with MaxBuffered left at its default (MaxBytes / 2 per
// partition) and inserts that do not return, the writer never pulls a partition whose held
// frames reach the bound (checked at every pull), so a backlog stays in the queue, not in
// memory. Once inserts return, every row lands once.
func TestHeldBytesAreBoundedByDefault(t *testing.T) {
	e := newEnv(t)
	gate := &gatedStore{Inserter: e.s, open: make(chan struct{})}
	cfg := DefaultConfig()
	cfg.MaxBytes = 8 << 10
	cfg.MaxWait, cfg.FetchWait, cfg.FetchBatch = 20*time.Millisecond, 20*time.Millisecond, 1
	bound := cfg.MaxBytes / 2
	consumer := &boundedConsumer{Consumer: e.q, bound: bound}
	w, err := New(cfg, Deps{Consumer: consumer, Store: gate, Targets: e, Hooks: e.settledHook()})
	if err != nil {
		t.Fatal(err)
	}
	consumer.w.Store(w)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = w.Run(ctx); close(stopped) }()
	t.Cleanup(func() { gate.release(); cancel(); <-stopped })

	name := strings.Repeat("u", 1000) // one ~1 KiB frame per publish
	var ps []mq.Position
	for i := range 64 {
		ps = append(ps, e.publish(t, fmt.Sprintf(`[%d,%q]`, i+1, name)))
	}
	p := -1
	poll.Until(t, 10*time.Second, "the writer to hold the bound's worth of frames", func() bool {
		for q := range e.q.Partitions() {
			if w.held.partitionBytes(q) >= bound {
				p = q
				return true
			}
		}
		return false
	})
	// Frames are waiting in the queue, so an unbounded writer pulls again within a FetchWait;
	// give it several before the inserts are let through (the check above does not depend on it).
	time.Sleep(10 * cfg.FetchWait)
	held := w.held.partitionBytes(p)
	if n := consumer.violations.Load(); n > 0 {
		t.Fatalf("%d pulls of partition %d while it held %d bytes or more (now %d)", n, p, bound, held)
	}
	if held > bound+1100 { // the pull that crossed the bound: one frame (FetchBatch 1) over it
		t.Fatalf("partition %d holds %d bytes, want at most %d plus one frame", p, held, bound)
	}

	gate.release()
	e.waitSettled(t, ps...)
	ids := e.ids(t)
	if len(ids) != len(ps) {
		t.Fatalf("%d rows landed, want %d once each", len(ids), len(ps))
	}
	for i, id := range ids {
		if id != uint64(i+1) {
			t.Fatalf("ids %v, want 1..%d once each", ids, len(ps))
		}
	}
}
