package gatewaybin

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestEventually returns once the condition holds, and fails the test naming what it waited for
// when the condition never does.
func TestEventually(t *testing.T) {
	var calls atomic.Int64
	Eventually(t, 10*time.Second, "the third call", func() bool { return calls.Add(1) >= 3 })
	if n := calls.Load(); n != 3 {
		t.Fatalf("condition called %d times, want 3 (it returns as soon as the condition holds)", n)
	}
	msg := fatalOf(t, func(tb testing.TB) { Eventually(tb, 3*PollInterval, "never", func() bool { return false }) })
	if !strings.Contains(msg, "timed out after") || !strings.Contains(msg, "waiting for never") {
		t.Fatalf("Eventually on a false condition failed with %q, want the timeout and what it waited for", msg)
	}
}
