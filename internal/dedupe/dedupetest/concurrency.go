package dedupetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// testConcurrentReserves starts 64 reserves of one key at once, split across two clients, and
// checks that exactly one wins and every other one sees the winner's claim, over several
// rounds with fresh keys.
func testConcurrentReserves(t *testing.T, e *env) {
	clients := []dedupe.Store{e.h.Open(t), e.h.Open(t)}
	const n = 64
	// A lost race shows up only in some rounds, so fast backends run more of them: at least
	// three, then more until a small time budget is spent.
	began := time.Now()
	for round := 0; round < 3 || (round < 100 && time.Since(began) < 2*time.Second); round++ {
		k := key(fmt.Sprintf("req-race-%d", round))
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			results = make([]dedupe.Reservation, n)
			errs    = make([]error, n)
		)
		for i := range n {
			wg.Go(func() {
				<-start
				results[i], errs[i] = clients[i%2].Reserve(ctxFor(t), k, fpA, lease)
			})
		}
		close(start)
		wg.Wait()

		winners := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d: Reserve %d: %v", round, i, errs[i])
			}
			switch results[i].Outcome {
			case dedupe.OutcomeClaimed:
				winners++
			case dedupe.OutcomeInFlight:
			default:
				t.Fatalf("round %d: Reserve %d outcome = %v, want claimed or in_flight", round, i, results[i].Outcome)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d of %d concurrent reserves won, want exactly 1", round, winners, n)
		}
	}
}
