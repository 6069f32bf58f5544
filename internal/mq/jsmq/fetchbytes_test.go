package jsmq

import (
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// TestFetchIsBoundedByBytes: one pull holds at most Options.FetchMaxBytes of frames whatever
// frame count it asks for, and the frames it leaves come with the next pulls, none lost.
func TestFetchIsBoundedByBytes(t *testing.T) {
	nc := testConn(t)
	// A bound of twice the largest message (the floor is max_payload plus room) and records
	// that travel alone in their frame (two would not fit MaxFrameBytes).
	bound := 2 * (int(nc.MaxPayload()) + 64<<10)
	record := int(nc.MaxPayload()) * 3 / 4
	q := testQueue(t, nc, Options{Topology: testTopology(t, "fetchbytes"), FetchMaxBytes: bound, MaxFrameBytes: record + 1024})
	ctx := t.Context()
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
