package jsmq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestTenantBudget: TenantBudget overrides TenantMaxBytes per tenant (0 falls back to it, a
// negative value is unlimited), and an acknowledged frame gives its bytes back.
func TestTenantBudget(t *testing.T) {
	nc, err := nats.Connect(testsvc.NATSServer(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	topo := Topology{Prefix: testsvc.UniqueName(t, "budget"), Partitions: 1, Replicas: 1, MaxBytes: 64 << 20,
		DuplicateWindow: time.Minute, AckWait: 5 * time.Second, MaxAckPending: 100}
	budgets := map[string]int64{"small": 100, "default": 0, "unlimited": -1}
	q, err := New(nc, Options{Topology: topo, TenantMaxBytes: 300, TenantBudget: func(tenant string) int64 { return budgets[tenant] }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := topo.Ensure(ctx, q.JetStream()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n := topo.Names()
		_ = q.JetStream().DeleteStream(context.Background(), n.Stream(0))
		_ = q.JetStream().DeleteStream(context.Background(), n.DLQStream())
		_ = q.JetStream().DeleteKeyValue(context.Background(), n.LeaseBucket())
		_ = q.JetStream().DeleteKeyValue(context.Background(), n.JournalBucket())
		_ = q.JetStream().DeleteKeyValue(context.Background(), n.SchemaBucket())
		_ = q.Close(context.Background())
	})
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
