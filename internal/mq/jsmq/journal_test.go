package jsmq

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestJournalPlansOutliveRedelivery: the journal bucket has no max_age (the 24 h it had could
// expire a plan while its frames were still being redelivered), so a plan older than that is
// still found by Lookup; CompactJournal never removes a plan whose frames can still be delivered,
// removes one whose frames were all acknowledged, and clears forgotten plans' markers; Verify
// reports a journal bucket that has a TTL.
func TestJournalPlansOutliveRedelivery(t *testing.T) {
	nc, err := nats.Connect(testsvc.NATSServer(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	topo := Topology{Prefix: testsvc.UniqueName(t, "journal"), Partitions: 1, Replicas: 1, MaxBytes: 64 << 20,
		DuplicateWindow: time.Minute, AckWait: 5 * time.Second, MaxAckPending: 100}
	var (
		mu  sync.Mutex
		now = time.Now()
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	q, err := New(nc, Options{Topology: topo, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	js := q.JetStream()
	if err := topo.Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	n := topo.Names()
	t.Cleanup(func() {
		_ = js.DeleteStream(context.Background(), n.Stream(0))
		_ = js.DeleteStream(context.Background(), n.DLQStream())
		_ = js.DeleteKeyValue(context.Background(), n.LeaseBucket())
		_ = js.DeleteKeyValue(context.Background(), n.JournalBucket())
		_ = q.Close(context.Background())
	})
	kv, err := js.KeyValue(ctx, n.JournalBucket())
	if err != nil {
		t.Fatal(err)
	}
	if st, err := kv.Status(ctx); err != nil || st.TTL() != 0 {
		t.Fatalf("journal bucket ttl = %v (%v), want none", st.TTL(), err)
	}

	frames := []mq.FrameRef{{Partition: 0, Seq: 1}, {Partition: 0, Seq: 2}}
	plan := mq.BatchPlan{ID: mq.PlanID(frames), Tenant: "t", Table: "x", Frames: frames}
	planned := clock()
	if err := q.Plan(ctx, plan); err != nil {
		t.Fatal(err)
	}
	advance(25 * time.Hour) // older than the journal's old 24 h max_age
	lookup := func() bool {
		t.Helper()
		got, err := q.Lookup(ctx, "t", "x", frames, planned)
		if err != nil {
			t.Fatal(err)
		}
		return got[frames[0]].ID == plan.ID && got[frames[1]].ID == plan.ID
	}
	if !lookup() {
		t.Fatal("a plan older than the old journal TTL is not found")
	}
	// Its frames are not acknowledged (not even stored yet): compaction keeps it.
	if removed, err := q.CompactJournal(ctx, clock()); err != nil || removed != 0 || !lookup() {
		t.Fatalf("compaction with frames above the ack floor: removed %d, %v, still found %v", removed, err, lookup())
	}
	// Once both frames are acknowledged, a plan left behind by a lost Forget is compacted.
	for range 2 {
		if _, err := q.Publish(ctx, mq.Record{Tenant: "t", Table: "x", Payload: []byte("r")}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := q.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for acked, deadline := 0, time.Now().Add(10*time.Second); acked < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 frames acknowledged", acked)
		}
		ds, err := s.Fetch(ctx, 2, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
			acked++
		}
	}
	if removed, err := q.CompactJournal(ctx, clock()); err != nil || removed != 1 || lookup() {
		t.Fatalf("compaction with every frame acknowledged: removed %d, %v, still found %v", removed, err, lookup())
	}
	// A forgotten plan's delete marker is removed too: the bucket ends empty.
	other := []mq.FrameRef{{Partition: 0, Seq: 9}}
	forgotten := mq.BatchPlan{ID: mq.PlanID(other), Tenant: "t", Table: "x", Frames: other}
	if err := q.Plan(ctx, forgotten); err != nil {
		t.Fatal(err)
	}
	if err := q.Forget(ctx, forgotten); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "an empty journal after compaction", func() bool {
		if _, err := q.CompactJournal(ctx, clock().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Values() == 0
	})

	// A bucket with a max_age (as the old topology created it) is reported.
	old := topo.KeyValues()[1]
	old.TTL = 24 * time.Hour
	if _, err := js.CreateOrUpdateKeyValue(ctx, old); err != nil {
		t.Fatal(err)
	}
	diffs, err := topo.Verify(ctx, js)
	if err != nil || len(diffs) != 1 || !strings.Contains(diffs[0], "ttl is 24h0m0s, want none") {
		t.Fatalf("verify of a journal bucket with a ttl: %v, %v", diffs, err)
	}
}
