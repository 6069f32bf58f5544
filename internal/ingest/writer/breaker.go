package writer

import (
	"math/rand/v2"
	"sync"
	"time"
)

// breaker stops hammering a store target that keeps failing transiently: after n consecutive
// failures it opens for a cool-down, then lets one probe through; the probe's outcome closes or
// re-opens it. It is safe for concurrent use.
type breaker struct {
	mu       sync.Mutex
	n        int
	cooldown time.Duration
	failures int
	openTill time.Time
	probing  bool
}

// allow reports whether a flush may try the store now, and otherwise how long to wait.
func (b *breaker) allow(now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures < b.n {
		return true, 0
	}
	if now.Before(b.openTill) {
		return false, b.openTill.Sub(now)
	}
	if b.probing {
		return false, b.cooldown
	}
	b.probing = true
	return true, 0
}

func (b *breaker) success() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures, b.probing = 0, false
}

// failure records a transient failure and reports whether the breaker is open now.
func (b *breaker) failure(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	b.probing = false
	if b.failures >= b.n {
		b.openTill = now.Add(b.cooldown)
		return true
	}
	return false
}

func (b *breaker) open(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures >= b.n && now.Before(b.openTill)
}

// backoff is the redelivery delay of a frame's attempt-th failure (attempt ≥ 1).
func backoff(min, max time.Duration, attempt int) time.Duration {
	d := min
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	d = min64(d, max)
	jitter := 0.8 + 0.4*rand.Float64()
	return time.Duration(float64(d) * jitter)
}

func min64(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}
