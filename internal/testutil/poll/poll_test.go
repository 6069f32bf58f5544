package poll_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/tbtest"
)

// TestUntil returns once the condition holds, and fails the test naming what it waited for
// when the condition never does.
func TestUntil(t *testing.T) {
	var calls atomic.Int64
	poll.Until(t, 10*time.Second, "the third call", func() bool { return calls.Add(1) >= 3 })
	if n := calls.Load(); n != 3 {
		t.Fatalf("condition called %d times, want 3 (it returns as soon as the condition holds)", n)
	}
	msg := tbtest.FatalOf(t, func(tb testing.TB) { poll.Until(tb, 3*poll.Interval, "never", func() bool { return false }) })
	if !strings.Contains(msg, "timed out after") || !strings.Contains(msg, "waiting for never") {
		t.Fatalf("Until on a false condition failed with %q, want the timeout and what it waited for", msg)
	}
}

// TestWithin reports whether the condition held in time, without failing the test when it did
// not.
func TestWithin(t *testing.T) {
	var calls atomic.Int64
	if !poll.Within(t, 10*time.Second, func() bool { return calls.Add(1) >= 2 }) || calls.Load() != 2 {
		t.Fatalf("Within on a condition true at the second call: %d calls, want true after 2", calls.Load())
	}
	start := time.Now()
	if poll.Within(t, 2*poll.Interval, func() bool { return false }) {
		t.Fatal("Within on a false condition reported true")
	}
	if d := time.Since(start); d < 2*poll.Interval {
		t.Fatalf("Within gave up after %v, before its timeout %v", d, 2*poll.Interval)
	}
}
