package rediscache

import (
	"sync"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache"
)

// breaker is a consecutive-failure circuit breaker. Closed, it counts failures; at the
// threshold it opens and refuses operations for the cool-down; then it lets exactly one
// probe through (half-open), whose success closes it and whose failure reopens it.
type breaker struct {
	threshold int
	cooldown  time.Duration
	now       func() time.Time
	onChange  func(from, to cache.BreakerState)

	mu       sync.Mutex
	state    cache.BreakerState
	failures int
	openedAt time.Time
	probing  bool
	opens    uint64
}

// allow reports whether an operation may run, and whether it is the probe.
func (b *breaker) allow() (ok, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case cache.BreakerOpen:
		if b.now().Sub(b.openedAt) < b.cooldown {
			return false, false
		}
		b.setLocked(cache.BreakerHalfOpen)
		b.probing = true
		return true, true
	case cache.BreakerHalfOpen:
		if b.probing {
			return false, false
		}
		b.probing = true
		return true, true
	}
	return true, false
}

// success records an operation that reached the server. Only the probe closes an open
// breaker: an operation that started before the breaker opened proves nothing about now.
func (b *breaker) success(probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case probe:
		b.probing = false
		b.failures = 0
		b.setLocked(cache.BreakerClosed)
	case b.state == cache.BreakerClosed:
		b.failures = 0
	}
}

// failure records an operation that could not reach the server.
func (b *breaker) failure(probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probing = false
	}
	switch b.state {
	case cache.BreakerClosed:
		b.failures++
		if b.failures >= b.threshold {
			b.opens++
			b.openedAt = b.now()
			b.setLocked(cache.BreakerOpen)
		}
	case cache.BreakerHalfOpen:
		if probe {
			b.openedAt = b.now()
			b.setLocked(cache.BreakerOpen)
		}
	}
}

// abandon releases the probe slot of an operation whose outcome says nothing about the
// server (the caller's context ended).
func (b *breaker) abandon(probe bool) {
	if !probe {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
}

func (b *breaker) setLocked(to cache.BreakerState) {
	from := b.state
	b.state = to
	if b.onChange != nil && from != to {
		b.onChange(from, to)
	}
}

func (b *breaker) snapshot() (cache.BreakerState, uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state, b.opens
}
