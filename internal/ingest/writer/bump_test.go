package writer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// order records the sequence of acks and cache bumps.
type order struct {
	mu     sync.Mutex
	events []string
}

func (o *order) add(e string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
}

func (o *order) snapshot() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.events...)
}

// ackOrder is the real queue whose deliveries note each ack in o.
type ackOrder struct {
	mq.Consumer
	o *order
}

func (a ackOrder) Subscribe(ctx context.Context, p int) (mq.Subscription, error) {
	s, err := a.Consumer.Subscribe(ctx, p)
	return ackOrderSub{Subscription: s, o: a.o}, err
}

type ackOrderSub struct {
	mq.Subscription
	o *order
}

func (s ackOrderSub) Fetch(ctx context.Context, n int, wait time.Duration) ([]mq.Delivery, error) {
	ds, err := s.Subscription.Fetch(ctx, n, wait)
	for i, d := range ds {
		ds[i] = ackOrderDelivery{Delivery: d, o: s.o}
	}
	return ds, err
}

type ackOrderDelivery struct {
	mq.Delivery
	o *order
}

func (d ackOrderDelivery) Ack(ctx context.Context) error {
	d.o.add("ack")
	return d.Delivery.Ack(ctx)
}

// TestCacheBumpedBeforeAck: the table's cache version is bumped before any frame of the batch is
// acknowledged, so a crash after the acks cannot leave cached results stale (nothing would
// redeliver the frames to bump it later).
func TestCacheBumpedBeforeAck(t *testing.T) {
	e := newEnv(t)
	o := &order{}
	hooks := e.settledHook()
	hooks.Inserted = func(context.Context, string, string) { o.add("bump") }
	runWriter(t, Deps{Consumer: ackOrder{Consumer: e.q, o: o}, Journal: e.q, Store: e.s, Targets: e, Hooks: hooks})
	e.waitSettled(t, e.publish(t, `[1,"a"]`))
	got := o.snapshot()
	if len(got) < 2 || got[0] != "bump" {
		t.Fatalf("events %v: the cache version must be bumped before the first ack", got)
	}
}
