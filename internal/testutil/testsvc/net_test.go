package testsvc

import (
	"sync"
	"testing"
)

// TestFreePortsNeverRepeatWithinAProcess asks for many ports, one at a time from parallel
// goroutines, as parallel tests starting servers do. Each port's listener is closed before the
// next call, so the kernel may offer it again (bind(0) picks at random: 2,000 draws from this
// box's ~28,000 ephemeral ports repeat dozens of times); freePorts must never hand it out twice.
func TestFreePortsNeverRepeatWithinAProcess(t *testing.T) {
	const workers, each = 8, 250
	var (
		mu   sync.Mutex
		seen = make(map[int]int)
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for range each {
				ports, err := freePorts(1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[ports[0]]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for port, n := range seen {
		if n > 1 {
			t.Errorf("port %d handed out %d times", port, n)
		}
	}
	if len(seen) != workers*each && !t.Failed() {
		t.Fatalf("%d distinct ports, want %d", len(seen), workers*each)
	}
}
