package jsmq

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// TestTenantBudget: TenantBudget overrides TenantMaxBytes per tenant (0 falls back to it, a
// negative value is unlimited), and an acknowledged frame gives its bytes back.
func TestTenantBudget(t *testing.T) {
	nc := testConn(t)
	budgets := map[string]int64{"small": 100, "default": 0, "unlimited": -1}
	q := testQueue(t, nc, Options{Topology: testTopology(t, "budget"), TenantMaxBytes: 300, TenantBudget: func(tenant string) int64 { return budgets[tenant] }})
	ctx := t.Context()
	payload := make([]byte, 90)
	publish := func(tenant string) error {
		_, err := q.Publish(ctx, mq.Record{Tenant: tenant, Table: "t", Payload: payload})
		return err
	}
	for tenant, fits := range map[string]int{"small": 1, "default": 3, "unlimited": 20} {
		for i := range fits {
			if err := publish(tenant); err != nil {
				t.Fatalf("%s: publish %d: %v", tenant, i, err)
			}
		}
		if tenant == "unlimited" {
			continue
		}
		if err := publish(tenant); !errors.Is(err, mq.ErrQueueFull) {
			t.Fatalf("%s: publish beyond its budget = %v, want ErrQueueFull", tenant, err)
		}
	}
	// Acknowledging small's frame frees its budget.
	s, err := q.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	freed := false
	for deadline := time.Now().Add(10 * time.Second); !freed && time.Now().Before(deadline); {
		ds, err := s.Fetch(ctx, 100, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
			freed = freed || d.Records()[0].Tenant == "small"
		}
	}
	if !freed {
		t.Fatal("small's frame was not delivered")
	}
	if err := publish("small"); err != nil {
		t.Fatalf("publish after the ack freed the budget: %v", err)
	}
}

// TestRebuiltBudgetReturnsFramesAckedAboveTheFloor: a queue opened over a backlog charges every
// frame above the ingest ack floor, including frames acknowledged out of order by the previous
// process. Those are never delivered again: their charge comes back once the floor passes them,
// looked at only when a publish would be refused and at most once per bootSweepEvery.
func TestRebuiltBudgetReturnsFramesAckedAboveTheFloor(t *testing.T) {
	nc := testConn(t)
	topo := testTopology(t, "rebuild")
	var (
		mu  sync.Mutex
		now = time.Unix(1_700_000_000, 0)
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	opts := Options{Topology: topo, TenantMaxBytes: 1000, Now: clock}
	ctx := t.Context()
	first, err := New(nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.Ensure(ctx, first.JetStream()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n := topo.Names()
		_ = first.JetStream().DeleteStream(context.Background(), n.Stream(0))
		_ = first.JetStream().DeleteStream(context.Background(), n.DLQStream())
		_ = first.JetStream().DeleteKeyValue(context.Background(), n.LeaseBucket())
		_ = first.JetStream().DeleteKeyValue(context.Background(), n.JournalBucket())
	})
	publish := func(q *Queue, table string) error {
		_, err := q.Publish(ctx, mq.Record{Tenant: "a", Table: table, Payload: make([]byte, 100)})
		return err
	}
	for _, table := range []string{"x", "x", "x", "x", "x", "y", "y", "y", "y", "y"} {
		if err := publish(first, table); err != nil {
			t.Fatal(err)
		}
	}
	// The first process acknowledges table y's frames (above the floor) and hands x's back.
	fetchAll := func(q *Queue, n int, settle func(mq.Delivery) error) {
		t.Helper()
		s, err := q.Subscribe(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for got, deadline := 0, time.Now().Add(10*time.Second); got < n; {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d frames delivered", got, n)
			}
			ds, err := s.Fetch(ctx, n-got, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				if err := settle(d); err != nil {
					t.Fatal(err)
				}
			}
			got += len(ds)
		}
	}
	fetchAll(first, 10, func(d mq.Delivery) error {
		if d.Records()[0].Table == "y" {
			return d.Ack(ctx)
		}
		return d.Nak(ctx, 0)
	})
	_ = first.Close(ctx)

	q, err := New(nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	if err := q.RebuildBudget(ctx); err != nil {
		t.Fatal(err)
	}
	if err := publish(q, "x"); !errors.Is(err, mq.ErrQueueFull) {
		t.Fatalf("publish over the rebuilt budget = %v, want mq.ErrQueueFull", err)
	}
	// x's frames come back and are acknowledged: their boot charge is returned, and the floor
	// now passes y's frames too.
	fetchAll(q, 5, func(d mq.Delivery) error { return d.Ack(ctx) })
	for i := range 5 {
		if err := publish(q, "z"); err != nil {
			t.Fatalf("publish %d after x was acknowledged: %v", i, err)
		}
	}
	if err := publish(q, "z"); !errors.Is(err, mq.ErrQueueFull) {
		t.Fatalf("publish within bootSweepEvery of the last sweep = %v, want mq.ErrQueueFull", err)
	}
	mu.Lock()
	now = now.Add(bootSweepEvery)
	mu.Unlock()
	if err := publish(q, "z"); err != nil {
		t.Fatalf("publish once the floor passed the frames acknowledged before the restart: %v", err)
	}
}
