package writer

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/ingest/payload/payloadtest"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// TestEveryRecordSettlesWithinBoundAfterBursts ingests in bursts with pauses
// (the pattern of a load run that then stops) and measures, for every record,
// the time from publish to settled. With MaxWait 200 ms every record must
// settle within 10 s — far below the 30 s ack wait, so a frame that was
// fetched but never settled (and only comes back after the ack wait) fails
// the test instead of showing up as a slow tail.
func TestEveryRecordSettlesWithinBoundAfterBursts(t *testing.T) {
	const (
		bound   = 10 * time.Second
		clients = 20
		bursts  = 25
	)
	e := newEnv(t)
	var (
		mu        sync.Mutex
		published = map[mq.Position]time.Time{}
		settled   = map[mq.Position]time.Time{}
	)
	cfg := DefaultConfig()
	cfg.MaxWait = 200 * time.Millisecond
	cfg.FetchWait = 10 * time.Millisecond // many pulls expire while frames arrive
	w, err := New(cfg, Deps{Consumer: e.q, Store: e.s, Targets: e, Hooks: Hooks{Settled: func(_, _ string, p mq.Position, dead bool) {
		if dead {
			t.Errorf("record %v dead-lettered", p)
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := settled[p]; !ok {
			settled[p] = time.Now()
		}
	}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = w.Run(ctx); close(stopped) }()
	defer func() { cancel(); <-stopped }()

	id := 0
	for b := range bursts {
		var wg sync.WaitGroup
		for range clients {
			id++
			row := fmt.Sprintf(`[%d,"u"]`, id)
			wg.Go(func() {
				seg, err := payloadtest.Binary([]string{"id", "user"}, []string{"UInt64", "String"}, row)
				if err != nil {
					t.Error(err)
					return
				}
				body, err := payload.Encode([]payload.Segment{seg})
				if err != nil {
					t.Error(err)
					return
				}
				start := time.Now()
				res, err := e.q.Publish(t.Context(), mq.Record{Tenant: "t", Table: "events", Payload: body})
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
		if p := time.Duration(b%4) * 100 * time.Millisecond; p > 0 {
			pause := time.NewTimer(p) // traffic shape, not synchronisation
			<-pause.C
		}
	}

	poll.Within(t, bound+time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(settled) >= len(published)
	})

	mu.Lock()
	defer mu.Unlock()
	var late, missing int
	var worst time.Duration
	for p, at := range published {
		got, ok := settled[p]
		if !ok {
			missing++
			continue
		}
		d := got.Sub(at)
		worst = max(worst, d)
		if d > bound {
			late++
		}
	}
	t.Logf("%d records, worst publish→settled %v", len(published), worst)
	if missing+late > 0 {
		t.Fatalf("%d of %d records not settled within %v (%d settled later): a fetched frame was left unsettled until the ack wait",
			missing+late, len(published), bound, late)
	}
}
