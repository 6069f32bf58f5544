package embeddedmq_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
)

// TestTenantBudgetSurvivesRestart: a tenant's queue budget is rebuilt from the queue when it
// opens. Filled before a restart, it is still full after it (the backlog counts), and an ack of a
// frame stored before the restart gives that frame's bytes back.
func TestTenantBudgetSurvivesRestart(t *testing.T) {
	cfg := embeddedmq.Config{Dir: t.TempDir(), Partitions: 1, TenantMaxBytes: 1000}
	publish := func(q *embeddedmq.Queue) error {
		_, err := q.Publish(t.Context(), mq.Record{Tenant: "full", Table: "x", Payload: make([]byte, 100)})
		return err
	}
	q := open(t, cfg)
	for i := range 10 {
		if err := publish(q); err != nil {
			t.Fatalf("publish %d within the budget: %v", i, err)
		}
	}
	if err := publish(q); !errors.Is(err, mq.ErrQueueFull) {
		t.Fatalf("publish beyond the budget = %v, want mq.ErrQueueFull", err)
	}
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	q = open(t, cfg)
	if err := publish(q); !errors.Is(err, mq.ErrQueueFull) {
		t.Fatalf("after a restart, publish beyond the budget = %v, want mq.ErrQueueFull", err)
	}
	if _, err := q.Publish(t.Context(), mq.Record{Tenant: "other", Table: "x", Payload: make([]byte, 100)}); err != nil {
		t.Fatalf("another tenant's publish: %v", err)
	}
	s, err := q.Subscribe(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ds, err := s.Fetch(t.Context(), 1, 5*time.Second)
	if err != nil || len(ds) != 1 {
		t.Fatalf("fetch: %d deliveries, %v", len(ds), err)
	}
	if err := ds[0].Ack(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := publish(q); err != nil {
		t.Fatalf("publish after acking a frame stored before the restart: %v", err)
	}
	if err := publish(q); !errors.Is(err, mq.ErrQueueFull) {
		t.Fatalf("second publish after one ack = %v, want mq.ErrQueueFull", err)
	}
}
