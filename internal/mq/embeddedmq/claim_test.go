package embeddedmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
)

// TestClaimOfEarlierLifeIsTakenOver: no other process can consume the embedded queue, so a
// journal claim left by a process that died (here: a closed queue on the same directory) is taken
// over at once by the next life instead of blocking recovery of the batch for the claim's lease.
func TestClaimOfEarlierLifeIsTakenOver(t *testing.T) {
	dir := t.TempDir()
	cfg := embeddedmq.Config{Dir: dir, Partitions: 1}
	first := open(t, cfg)
	ctx := t.Context()
	res, err := first.Publish(ctx, mq.Record{Tenant: "acme", Table: "claims", Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	refs := []mq.FrameRef{{Partition: 0, Seq: res.Position.Seq}}
	p := mq.BatchPlan{ID: mq.PlanID(refs), Tenant: "acme", Table: "claims", Frames: refs}
	if err := first.Plan(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := first.Claim(ctx, p, time.Hour); err != nil || !ok {
		t.Fatalf("first claim = %v, %v", ok, err)
	}
	if _, ok, err := first.Claim(ctx, p, time.Hour); err != nil || ok {
		t.Fatalf("a second claim by the same life = %v, %v; want refused while the first is live", ok, err)
	}
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	second := open(t, cfg)
	if _, ok, err := second.Claim(ctx, p, time.Hour); err != nil || !ok {
		t.Fatalf("claim by the next life = %v, %v; want the dead life's claim taken over", ok, err)
	}
}
