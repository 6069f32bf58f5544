package embeddedmq_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

var errCrash = errors.New("crash between republish and delete")

// TestDLQReplayIdempotentAcrossCrash: a DLQ replay interrupted between republishing an entry and
// deleting it (the fault hook) and then run again stores the record in the ingest stream once,
// within the duplicate window and beyond it, across a restart of the queue.
func TestDLQReplayIdempotentAcrossCrash(t *testing.T) {
	t.Run("within the duplicate window", func(t *testing.T) { dlqReplayCrash(t, 0) })
	t.Run("beyond the duplicate window", func(t *testing.T) { dlqReplayCrash(t, time.Second) })
}

func dlqReplayCrash(t *testing.T, window time.Duration) {
	ctx := t.Context()
	cfg := embeddedmq.Config{Dir: t.TempDir(), Partitions: 1, DuplicateWindow: window}
	var crashes atomic.Int32
	crash := func(uint64) error {
		if crashes.Add(1) == 1 {
			return errCrash
		}
		return nil
	}
	q, err := embeddedmq.New(cfg, embeddedmq.Deps{AfterReplayPublish: crash})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Publish(ctx, mq.Record{Tenant: "t", Table: "x", Payload: []byte("poison")}); err != nil {
		t.Fatal(err)
	}
	s, err := q.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := s.Fetch(ctx, 1, 5*time.Second)
	if err != nil || len(ds) != 1 {
		t.Fatalf("fetch: %d, %v", len(ds), err)
	}
	if err := ds[0].(mq.DeadLetterer).DeadLetter(ctx, mq.Reason{Code: "bad"}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if n, err := q.DLQ().Replay(ctx, "t", "x", 10); !errors.Is(err, errCrash) || n != 0 {
		t.Fatalf("replay with the crash hook = %d, %v", n, err)
	}
	if window > 0 {
		// Wait until the window has forgotten a message id published after the crash: the
		// replay's id is forgotten too, and only the recorded replay can stop a second copy.
		probe := mq.Record{Tenant: "t", Table: "probe", IdempotencyKey: "probe", Payload: []byte("p")}
		if _, err := q.Publish(ctx, probe); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 30*time.Second, "the duplicate window forgetting the probe", func() bool {
			res, err := q.Publish(ctx, probe)
			if err != nil {
				t.Fatal(err)
			}
			return !res.Duplicate
		})
	}
	// The process "crashed": a new one opens the same store and replays again.
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	q, err = embeddedmq.New(cfg, embeddedmq.Deps{AfterReplayPublish: crash})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	if n, err := q.DLQ().Replay(ctx, "t", "x", 10); err != nil || n != 1 {
		t.Fatalf("replay after the crash = %d, %v; want 1", n, err)
	}
	st, err := q.Stats(ctx, "t", "x")
	if err != nil {
		t.Fatal(err)
	}
	// The original frame (dead-lettered, acknowledged, kept as history) and one replayed copy.
	if st.Retained != 2 || st.DeadLetters != 0 {
		t.Fatalf("table x holds %d frames and %d dead letters; want 2 (original + one replay) and 0", st.Retained, st.DeadLetters)
	}
	if n, err := q.DLQ().Replay(ctx, "t", "x", 10); err != nil || n != 0 {
		t.Fatalf("a third replay = %d, %v; want nothing left", n, err)
	}
}
