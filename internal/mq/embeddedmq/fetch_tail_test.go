package embeddedmq_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// TestFetchLosesNoFrameAtPullExpiry publishes in bursts with pauses while
// one subscription pulls with a short wait, so that many pull requests
// expire while frames are on their way to them. Every frame must be handed
// out by Fetch within a bound far below the ack wait: a frame the server
// delivered to a pull that the client had already abandoned is only seen
// again after the ack wait, which is the "last rows stall for ~26 s" bug.
func TestFetchLosesNoFrameAtPullExpiry(t *testing.T) {
	const (
		ackWait = 30 * time.Second
		bound   = 10 * time.Second
		bursts  = 60
		perB    = 40
	)
	q, err := embeddedmq.New(embeddedmq.Config{
		Dir: t.TempDir(), Sync: embeddedmq.SyncInterval, Partitions: 1, AckWait: ackWait, TenantMaxBytes: -1,
	}, embeddedmq.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })

	var (
		mu        sync.Mutex
		published = map[mq.Position]time.Time{}
		received  = map[mq.Position]time.Time{}
	)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sub, err := q.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	pulled := make(chan struct{})
	go func() {
		defer close(pulled)
		for ctx.Err() == nil {
			// A short wait makes many pulls expire, each a chance to lose a
			// frame that was in flight at its expiry.
			ds, err := sub.Fetch(ctx, 256, 10*time.Millisecond)
			if err != nil {
				continue
			}
			now := time.Now()
			for _, d := range ds {
				mu.Lock()
				for _, r := range d.Records() {
					if _, seen := received[r.Position]; !seen {
						received[r.Position] = now
					}
				}
				mu.Unlock()
				_ = d.Ack(context.WithoutCancel(ctx))
			}
		}
	}()

	for b := range bursts {
		var wg sync.WaitGroup
		for i := range perB {
			wg.Go(func() {
				start := time.Now()
				res, err := q.Publish(ctx, mq.Record{Tenant: "t", Table: fmt.Sprintf("x%d", i%4), Payload: []byte("row")})
				if err != nil {
					t.Errorf("publish: %v", err)
					return
				}
				mu.Lock()
				published[res.Position] = start
				mu.Unlock()
			})
		}
		wg.Wait()
		// A pause of about one pull wait lets pulls expire while idle.
		pause := time.NewTimer(time.Duration(b%4) * 5 * time.Millisecond)
		<-pause.C
	}

	poll.Within(t, bound+time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(received) >= len(published)
	})
	cancel()
	<-pulled

	mu.Lock()
	defer mu.Unlock()
	var late, missing int
	var worst time.Duration
	for p, at := range published {
		got, ok := received[p]
		if !ok {
			missing++
			continue
		}
		if d := got.Sub(at); d > worst {
			worst = d
		}
		if got.Sub(at) > bound {
			late++
		}
	}
	t.Logf("%d records, worst publish→fetch %v", len(published), worst)
	if missing > 0 || late > 0 {
		t.Fatalf("%d of %d records not fetched within %v (%d later than that): a pull dropped frames that only come back after the ack wait (%v)",
			missing+late, len(published), bound, late, ackWait)
	}
}

// TestFetchCancelledMidPullHandsFramesBack cancels a Fetch while its pull
// holds a frame (the pull waits for a fuller batch): the frame must be
// fetchable again at once, not only after the ack wait.
func TestFetchCancelledMidPullHandsFramesBack(t *testing.T) {
	q, err := embeddedmq.New(embeddedmq.Config{
		Dir: t.TempDir(), Sync: embeddedmq.SyncInterval, Partitions: 1, AckWait: 30 * time.Second, TenantMaxBytes: -1,
	}, embeddedmq.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	res, err := q.Publish(t.Context(), mq.Record{Tenant: "t", Table: "x", Payload: []byte("row")})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := q.Subscribe(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	ctx, cancel := context.WithCancel(t.Context())
	stop := time.AfterFunc(100*time.Millisecond, cancel)
	defer stop.Stop()
	if ds, err := sub.Fetch(ctx, 10, 400*time.Millisecond); !errors.Is(err, context.Canceled) || len(ds) != 0 {
		t.Fatalf("cancelled fetch: %d deliveries, %v; want none and context.Canceled", len(ds), err)
	}

	start := time.Now()
	for time.Since(start) < 5*time.Second {
		ds, err := sub.Fetch(t.Context(), 10, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.Records()[0].Position == res.Position {
				_ = d.Ack(t.Context())
				return
			}
		}
	}
	t.Fatal("frame held by a cancelled fetch not redelivered within 5s (ack wait 30s)")
}
