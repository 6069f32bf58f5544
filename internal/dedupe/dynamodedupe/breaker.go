package dynamodedupe

import (
	"sync"
	"time"
)

// breaker fails calls fast after a run of consecutive failures. After the cooldown it lets
// calls through again; the first success closes it, and a failure before any success opens it
// for another cooldown.
type breaker struct {
	threshold int
	cooldown  time.Duration

	mu        sync.Mutex
	failures  int
	tripped   bool // opened and not closed by a success since
	openUntil time.Time
}

// allow reports whether a call may go to the backend at now.
func (b *breaker) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !now.Before(b.openUntil)
}

// record notes a call's result at now and reports whether it opened the breaker.
func (b *breaker) record(failed bool, now time.Time) (opened bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !failed {
		b.failures = 0
		b.tripped = false
		return false
	}
	b.failures++
	if b.tripped || b.failures >= b.threshold {
		b.failures = 0
		b.tripped = true
		b.openUntil = now.Add(b.cooldown)
		return true
	}
	return false
}
