// Package poll is the one polling helper of the test suites: wait for a condition with a
// deadline instead of sleeping a guessed time.
package poll

import (
	"testing"
	"time"
)

// Interval is how often Until checks its condition.
const Interval = 10 * time.Millisecond

// Until calls cond every Interval until it reports true, and fails the test when it has not
// within timeout; what names the awaited state in the failure.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, what)
		}
		time.Sleep(Interval)
	}
}
