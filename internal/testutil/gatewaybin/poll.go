package gatewaybin

import (
	"testing"
	"time"
)

// PollInterval is how often Eventually checks its condition.
const PollInterval = 100 * time.Millisecond

// Eventually checks cond every PollInterval until it is true, failing the test (FailNow) when
// timeout passes first or the test's context ends; what names the awaited state in the message.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(PollInterval):
		}
	}
}
