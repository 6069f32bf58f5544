package jsmq

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestFetchIsBoundedByBytes: one pull holds at most Options.FetchMaxBytes of frames whatever
// frame count it asks for, and the frames it leaves come with the next pulls, none lost.
func TestFetchIsBoundedByBytes(t *testing.T) {
	nc, err := nats.Connect(testsvc.NATSServer(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	topo := Topology{Prefix: testsvc.UniqueName(t, "fetchbytes"), Partitions: 1, Replicas: 1, MaxBytes: 64 << 20,
		DuplicateWindow: time.Minute, AckWait: 30 * time.Second, MaxAckPending: 1000}
	// A bound of twice the largest message (the floor is max_payload plus room) and records
	// that travel alone in their frame (two would not fit MaxFrameBytes).
	bound := 2 * (int(nc.MaxPayload()) + 64<<10)
	record := int(nc.MaxPayload()) * 3 / 4
	q, err := New(nc, Options{Topology: topo, FetchMaxBytes: bound, MaxFrameBytes: record + 1024})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := topo.Ensure(ctx, q.JetStream()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n := topo.Names()
		for _, s := range []string{n.Stream(0), n.DLQStream()} {
			_ = q.JetStream().DeleteStream(context.Background(), s)
		}
		for _, b := range []string{n.LeaseBucket(), n.JournalBucket(), n.SchemaBucket()} {
			_ = q.JetStream().DeleteKeyValue(context.Background(), b)
		}
		_ = q.Close(context.Background())
	})
	const frames = 8
	for i := range frames {
		if _, err := q.Publish(ctx, mq.Record{Tenant: "t", Table: "t", Payload: make([]byte, record)}); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	s, err := q.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	maxPerPull := bound / record
	got := 0
	for deadline := time.Now().Add(20 * time.Second); got < frames && time.Now().Before(deadline); {
		ds, err := s.Fetch(ctx, 100, 500*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) > maxPerPull {
			t.Fatalf("one pull returned %d frames of %d bytes, over its %d-byte bound", len(ds), record, bound)
		}
		for _, d := range ds {
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		got += len(ds)
	}
	if got != frames {
		t.Fatalf("fetched %d frames, want %d", got, frames)
	}
}
