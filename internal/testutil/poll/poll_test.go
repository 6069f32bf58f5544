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
