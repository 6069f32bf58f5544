// Package poll is the one polling helper of the test suites: wait for a condition with a
// deadline instead of sleeping a guessed time.
package poll

import (
	"testing"
	"time"
)

// Interval is how often Until and Within check their condition.
const Interval = 100 * time.Millisecond

// Until checks cond every Interval until it is true, failing the test (FailNow) when timeout
// passes first or the test's context ends; what names the awaited state in the message.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(t, timeout, cond) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Within checks cond every Interval until it is true or timeout passes, and reports whether it
// became true: for a test that reports a condition that never held with what it measured
// rather than failing at once. It fails the test (FailNow) only when the test's context ends.
func Within(t testing.TB, timeout time.Duration, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(Interval):
		}
	}
	return true
}
