package chaos

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// TestLedgerHistory: a request's history names its outcome and every attempt's answer, with a
// run of equal answers folded into one line, and linesWith keeps the first and last log lines.
func TestLedgerHistory(t *testing.T) {
	l := newLedger()
	b := l.take()
	sent := time.Now()
	l.tried(b, sent, gatewaybin.Response{Status: 503, Body: []byte(`{"code":"idempotency.unsettled","error":"x"}`)}, nil)
	for range 3 {
		l.tried(b, sent, gatewaybin.Response{Status: 503, Body: []byte(`{"code":"dedupe.unavailable","error":"x"}`)}, nil)
	}
	l.tried(b, sent, gatewaybin.Response{}, errors.New("connection reset"))
	l.tried(b, sent, gatewaybin.Response{Status: 202, Header: http.Header{"Idempotent-Replayed": {"true"}}}, nil)
	l.set(b, keyedAcked)
	h := l.history(b)
	for _, want := range []string{
		"request 0 (ids 0-49, keyed, acknowledged)",
		"attempt 0 (X-Request-Id chaos-0-0)", "503 idempotency.unsettled",
		"attempts 1-3 (3×, X-Request-Id chaos-0-1…chaos-0-3)", "503 dedupe.unavailable",
		"attempt 4 (X-Request-Id chaos-0-4)", "0 connection reset",
		"attempt 5 (X-Request-Id chaos-0-5)", "202 replayed",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("history lacks %q:\n%s", want, h)
		}
	}
	if n := strings.Count(h, "\n"); n != 4 {
		t.Errorf("history has %d attempt lines, want 4 (a run folded):\n%s", n, h)
	}

	out := "a chaos-1-0 first\nother\nchaos-1-1 second\nchaos-12-0 not this one\nchaos-1-2 third\nchaos-1-3 fourth\n"
	got := linesWith(out, "chaos-1-", 1, 2)
	want := "    a chaos-1-0 first\n    … 1 lines left out …\n    chaos-1-2 third\n    chaos-1-3 fourth"
	if got != want {
		t.Errorf("linesWith = %q, want %q", got, want)
	}
	if got := linesWith(out, "chaos-9-", 1, 2); got != "    (none)" {
		t.Errorf("linesWith without a match = %q", got)
	}
}
