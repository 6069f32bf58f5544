package coordtest

import (
	"testing"
	"time"
)

func fired(tm interface{ C() <-chan time.Time }) bool {
	select {
	case <-tm.C():
		return true
	default:
		return false
	}
}

func TestManualClock(t *testing.T) {
	start := time.Unix(100, 0)
	c := NewManualClock(start)
	a := c.NewTimer(2 * time.Second)
	b := c.NewTimer(time.Second)
	stopped := c.NewTimer(time.Second)
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer = false")
	}
	c.Advance(999 * time.Millisecond)
	if fired(a) || fired(b) {
		t.Fatal("a timer fired before its deadline")
	}
	c.Advance(time.Millisecond)
	if !fired(b) || fired(a) || fired(stopped) {
		t.Fatal("after 1s: want only the 1s timer fired")
	}
	c.Advance(time.Second)
	if !fired(a) {
		t.Fatal("2s timer did not fire at 2s")
	}
	if a.Stop() {
		t.Fatal("Stop of a fired timer = true")
	}
	if got := c.Now().Sub(start); got != 2*time.Second {
		t.Fatalf("Now advanced by %s, want 2s", got)
	}
	if !fired(c.NewTimer(0)) {
		t.Fatal("a zero-duration timer did not fire at once")
	}
}
