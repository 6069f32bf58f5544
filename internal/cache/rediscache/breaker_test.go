package rediscache

import (
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache"
)

func TestBreakerOpensProbesAndCloses(t *testing.T) {
	now := time.Unix(0, 0)
	b := &breaker{threshold: 3, cooldown: time.Second, now: func() time.Time { return now }, state: cache.BreakerClosed}
	for i := range 2 {
		if ok, _ := b.allow(); !ok {
			t.Fatalf("closed breaker refused operation %d", i)
		}
		b.failure(false)
	}
	if s, _ := b.snapshot(); s != cache.BreakerClosed {
		t.Fatalf("state after 2 of 3 failures = %s; want closed", s)
	}
	b.success(false) // a success resets the count
	for range 3 {
		b.allow()
		b.failure(false)
	}
	if s, opens := b.snapshot(); s != cache.BreakerOpen || opens != 1 {
		t.Fatalf("after 3 consecutive failures: %s, %d opens; want open, 1", s, opens)
	}
	if ok, _ := b.allow(); ok {
		t.Fatal("open breaker let an operation through before the cool-down")
	}
	b.success(false) // an operation that started before the breaker opened
	if s, _ := b.snapshot(); s != cache.BreakerOpen {
		t.Fatalf("a late success of a non-probe operation moved the open breaker to %s", s)
	}
	now = now.Add(time.Second)
	ok, probe := b.allow()
	if !ok || !probe {
		t.Fatalf("after the cool-down allow() = %v, %v; want the probe", ok, probe)
	}
	if ok, _ := b.allow(); ok {
		t.Fatal("half-open breaker let a second operation through while the probe runs")
	}
	b.failure(true)
	if s, opens := b.snapshot(); s != cache.BreakerOpen || opens != 1 {
		t.Fatalf("after a failed probe: %s, %d opens; want open again, still 1 open counted", s, opens)
	}
	if ok, _ := b.allow(); ok {
		t.Fatal("reopened breaker let an operation through before a new cool-down")
	}
	now = now.Add(time.Second)
	_, probe = b.allow()
	b.abandon(probe) // the caller gave up: the probe slot is free again
	ok, probe = b.allow()
	if !ok || !probe {
		t.Fatal("abandoned probe did not free the probe slot")
	}
	b.success(true)
	if s, _ := b.snapshot(); s != cache.BreakerClosed {
		t.Fatalf("after a successful probe: %s; want closed", s)
	}
}
