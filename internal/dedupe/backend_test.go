package dedupe_test

import (
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

func TestLiveBoundaries(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	pending := dedupe.Record{State: dedupe.StatePending, LeaseUntil: at}
	committed := dedupe.Record{State: dedupe.StateCommitted, ExpiresAt: at}
	for _, rec := range []dedupe.Record{pending, committed} {
		if !rec.Live(at.Add(-time.Nanosecond)) {
			t.Fatalf("%v record not live just before its end", rec.State)
		}
		if rec.Live(at) {
			t.Fatalf("%v record live at its end", rec.State)
		}
	}
	if (dedupe.Record{}).Live(at) {
		t.Fatalf("zero record is live")
	}
}

func TestClassify(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	pending := dedupe.Record{State: dedupe.StatePending, Fingerprint: "a", LeaseUntil: now.Add(5 * time.Second)}
	committed := dedupe.Record{State: dedupe.StateCommitted, Fingerprint: "a", ExpiresAt: now.Add(time.Hour)}
	cases := []struct {
		rec   dedupe.Record
		fp    string
		want  dedupe.Outcome
		retry time.Duration
	}{
		{pending, "a", dedupe.OutcomeInFlight, 5 * time.Second},
		{pending, "b", dedupe.OutcomeMismatch, 5 * time.Second},
		{committed, "a", dedupe.OutcomeDuplicate, 0},
		{committed, "b", dedupe.OutcomeMismatch, 0},
	}
	for _, c := range cases {
		res := dedupe.Classify(c.rec, c.fp, now)
		if res.Outcome != c.want || res.RetryAfter != c.retry {
			t.Fatalf("Classify(%v, %q) = %v/%v, want %v/%v", c.rec.State, c.fp, res.Outcome, res.RetryAfter, c.want, c.retry)
		}
	}
}
