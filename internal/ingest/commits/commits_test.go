package commits

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

func TestWaitBeforeAndAfterSettle(t *testing.T) {
	l := New(4)
	p := mq.Position{Seq: 7, Index: 1}
	got := make(chan Outcome, 1)
	go func() {
		o, err := l.Wait(t.Context(), "t", "events", p)
		if err != nil {
			t.Error(err)
		}
		got <- o
	}()
	// The waiter may or may not have registered yet; both orders must work.
	l.Settled("t", "events", p, Inserted)
	if o := <-got; o != Inserted {
		t.Fatalf("outcome %v", o)
	}
	if o, err := l.Wait(t.Context(), "t", "events", p); err != nil || o != Inserted {
		t.Fatalf("late waiter: %v %v", o, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if o, err := l.Wait(ctx, "other", "events", p); err == nil {
		// a different tenant's identical position must not match
		t.Fatalf("tenant isolation broken: %v", o)
	}
}

func TestWaitTimesOutAndForgetsWaiter(t *testing.T) {
	l := New(4)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if _, err := l.Wait(ctx, "t", "e", mq.Position{Seq: 1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	l.mu.Lock()
	n := len(l.waiters)
	l.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d waiters leaked", n)
	}
}

func TestCapacityEvictsOldest(t *testing.T) {
	l := New(2)
	for i := uint64(1); i <= 3; i++ {
		l.Settled("t", "e", mq.Position{Seq: i}, DeadLettered)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Millisecond)
	defer cancel()
	if _, err := l.Wait(ctx, "t", "e", mq.Position{Seq: 1}); err == nil {
		t.Fatal("evicted outcome still found")
	}
	if o, err := l.Wait(t.Context(), "t", "e", mq.Position{Seq: 3}); err != nil || o != DeadLettered {
		t.Fatalf("recent outcome: %v %v", o, err)
	}
}
