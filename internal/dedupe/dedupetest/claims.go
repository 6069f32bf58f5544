package dedupetest

import (
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

func testReserveCommitReplays(t *testing.T, e *env) {
	s := e.h.Open(t)
	k := key("req-1")
	start := e.clock.Now()
	c := claim(t, s, k, fpA, lease)
	wantTime(t, "Claim.LeaseUntil", c.LeaseUntil, start.Add(lease))

	rec, err := s.Get(ctxFor(t), k)
	if err != nil {
		t.Fatalf("Get pending: %v", err)
	}
	if rec.State != dedupe.StatePending || rec.Fingerprint != fpA {
		t.Fatalf("Get pending = %+v, want pending with fingerprint %q", rec, fpA)
	}
	wantTime(t, "pending LeaseUntil", rec.LeaseUntil, start.Add(lease))

	e.clock.Advance(time.Second)
	want := dedupe.Response{Status: 202, Body: []byte(`{"accepted":3,"seq":42}`)}
	commit(t, s, k, c.Token, want, retention)

	e.clock.Advance(time.Minute)
	res := reserve(t, s, k, fpA, lease)
	wantOutcome(t, res, dedupe.OutcomeDuplicate)
	if res.Record.State != dedupe.StateCommitted || res.Record.Fingerprint != fpA {
		t.Fatalf("duplicate record = %+v, want committed with fingerprint %q", res.Record, fpA)
	}
	wantResponse(t, res.Record.Response, want)
	wantTime(t, "ExpiresAt", res.Record.ExpiresAt, start.Add(time.Second+retention))

	rec, err = s.Get(ctxFor(t), k)
	if err != nil {
		t.Fatalf("Get committed: %v", err)
	}
	if rec.State != dedupe.StateCommitted {
		t.Fatalf("Get committed state = %v", rec.State)
	}
	wantResponse(t, rec.Response, want)
}

func testReleaseMakesClaimable(t *testing.T, e *env) {
	s := e.h.Open(t)
	k := key("req-release")
	c := claim(t, s, k, fpA, lease)
	if err := s.Release(ctxFor(t), k, c.Token); err != nil {
		t.Fatalf("Release: %v", err)
	}
	_, err := s.Get(ctxFor(t), k)
	wantErr(t, "Get after Release", err, dedupe.ErrNotFound)

	// The key is free right away, with no clock movement, for any fingerprint.
	c2 := claim(t, s, k, fpB, lease)
	if c2.Token == c.Token {
		t.Fatalf("second claim reused token %q", c.Token)
	}
	if err := s.Release(ctxFor(t), k, c2.Token); err != nil {
		t.Fatalf("Release second claim: %v", err)
	}
}

func testLiveLeaseBlocks(t *testing.T, e *env) {
	s1, s2 := e.h.Open(t), e.h.Open(t)
	k := key("req-inflight")
	c := claim(t, s1, k, fpA, lease)

	e.clock.Advance(3 * time.Second)
	res := reserve(t, s2, k, fpA, lease)
	wantOutcome(t, res, dedupe.OutcomeInFlight)
	if res.RetryAfter != lease-3*time.Second {
		t.Fatalf("RetryAfter = %v, want %v", res.RetryAfter, lease-3*time.Second)
	}
	if res.Record.State != dedupe.StatePending {
		t.Fatalf("in-flight record state = %v", res.Record.State)
	}

	res = reserve(t, s2, k, fpB, lease)
	wantOutcome(t, res, dedupe.OutcomeMismatch)
	if res.Record.Fingerprint != fpA || res.Record.State != dedupe.StatePending {
		t.Fatalf("mismatch record = %+v, want pending with %q", res.Record, fpA)
	}
	if res.RetryAfter != lease-3*time.Second {
		t.Fatalf("mismatch RetryAfter = %v, want %v", res.RetryAfter, lease-3*time.Second)
	}

	// One millisecond before the lease ends the claim still holds.
	e.clock.Advance(lease - 3*time.Second - time.Millisecond)
	res = reserve(t, s2, k, fpA, lease)
	wantOutcome(t, res, dedupe.OutcomeInFlight)
	if res.RetryAfter != time.Millisecond {
		t.Fatalf("RetryAfter at lease end = %v, want 1ms", res.RetryAfter)
	}

	// The holder can still commit, and the second client then sees the duplicate.
	commit(t, s1, k, c.Token, resp("first"), retention)
	res = reserve(t, s2, k, fpA, lease)
	wantOutcome(t, res, dedupe.OutcomeDuplicate)
	wantResponse(t, res.Record.Response, resp("first"))
}

func testExpiredLeaseReclaimable(t *testing.T, e *env) {
	s1, s2 := e.h.Open(t), e.h.Open(t)
	k := key("req-expired")
	claim(t, s1, k, fpA, 10*time.Second)

	e.clock.Advance(10 * time.Second) // exactly at the lease end: expired
	_, err := s2.Get(ctxFor(t), k)
	wantErr(t, "Get after lease end", err, dedupe.ErrNotFound)

	res := reserve(t, s2, k, fpB, lease)
	wantOutcome(t, res, dedupe.OutcomeClaimed)
	if !res.Reclaimed {
		t.Fatalf("claim over a lapsed lease has Reclaimed = false")
	}
	rec, err := s1.Get(ctxFor(t), k)
	if err != nil {
		t.Fatalf("Get new claim: %v", err)
	}
	if rec.Fingerprint != fpB {
		t.Fatalf("record fingerprint = %q, want the new claim's %q", rec.Fingerprint, fpB)
	}
	commit(t, s2, k, res.Claim.Token, resp("second"), retention)
	res = reserve(t, s1, k, fpB, lease)
	wantOutcome(t, res, dedupe.OutcomeDuplicate)
	wantResponse(t, res.Record.Response, resp("second"))
}

func testCommitAfterLeaseEnd(t *testing.T, e *env) {
	s := e.h.Open(t)
	k := key("req-late-commit")
	c := claim(t, s, k, fpA, 5*time.Second)
	e.clock.Advance(time.Minute)
	// Nobody reclaimed the key, so the claim is still ours.
	commit(t, s, k, c.Token, resp("late"), retention)
	res := reserve(t, s, k, fpA, lease)
	wantOutcome(t, res, dedupe.OutcomeDuplicate)
	wantResponse(t, res.Record.Response, resp("late"))
}

func testRetentionExpiry(t *testing.T, e *env) {
	s := e.h.Open(t)
	k := key("req-retention")
	c := claim(t, s, k, fpA, lease)
	commit(t, s, k, c.Token, resp("kept"), time.Hour)

	e.clock.Advance(time.Hour - time.Millisecond)
	res := reserve(t, s, k, fpA, lease)
	wantOutcome(t, res, dedupe.OutcomeDuplicate)
	// Within retention a different body is still a mismatch.
	wantOutcome(t, reserve(t, s, k, fpB, lease), dedupe.OutcomeMismatch)

	e.clock.Advance(time.Millisecond)
	_, err := s.Get(ctxFor(t), k)
	wantErr(t, "Get after retention", err, dedupe.ErrNotFound)
	res = reserve(t, s, k, fpB, lease)
	wantOutcome(t, res, dedupe.OutcomeClaimed)
	if !res.Reclaimed {
		t.Fatalf("claim over an expired record has Reclaimed = false")
	}
}

func testStaleRelease(t *testing.T, e *env) {
	s1, s2 := e.h.Open(t), e.h.Open(t)
	k := key("req-stale-release")
	old := claim(t, s1, k, fpA, lease)
	e.clock.Advance(lease)
	newer := claim(t, s2, k, fpA, lease)

	wantErr(t, "stale Release", s1.Release(ctxFor(t), k, old.Token), dedupe.ErrNotOwner)
	// The newer claim still blocks.
	wantOutcome(t, reserve(t, s1, k, fpA, lease), dedupe.OutcomeInFlight)
	commit(t, s2, k, newer.Token, resp("newer"), retention)
	wantOutcome(t, reserve(t, s1, k, fpA, lease), dedupe.OutcomeDuplicate)

	// A release by the same, already committed token cannot delete the response either.
	wantErr(t, "Release after Commit", s2.Release(ctxFor(t), k, newer.Token), dedupe.ErrNotOwner)
	res := reserve(t, s1, k, fpA, lease)
	wantOutcome(t, res, dedupe.OutcomeDuplicate)
	wantResponse(t, res.Record.Response, resp("newer"))
}

func testStaleCommit(t *testing.T, e *env) {
	s1, s2 := e.h.Open(t), e.h.Open(t)
	k := key("req-stale-commit")
	old := claim(t, s1, k, fpA, lease)
	e.clock.Advance(lease + time.Second)
	newer := claim(t, s2, k, fpA, lease)

	err := s1.Commit(ctxFor(t), k, old.Token, resp("stale"), retention)
	wantErr(t, "stale Commit", err, dedupe.ErrNotOwner)
	rec, err := s2.Get(ctxFor(t), k)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if rec.State != dedupe.StatePending {
		t.Fatalf("stale commit changed the newer claim: %+v", rec)
	}
	commit(t, s2, k, newer.Token, resp("newer"), retention)
	res := reserve(t, s1, k, fpA, lease)
	wantOutcome(t, res, dedupe.OutcomeDuplicate)
	wantResponse(t, res.Record.Response, resp("newer"))
}

func testCommitReleaseOnce(t *testing.T, e *env) {
	s := e.h.Open(t)
	k := key("req-once")
	c := claim(t, s, k, fpA, lease)
	commit(t, s, k, c.Token, resp("one"), retention)
	err := s.Commit(ctxFor(t), k, c.Token, resp("two"), retention)
	wantErr(t, "second Commit", err, dedupe.ErrNotOwner)
	res := reserve(t, s, k, fpA, lease)
	wantOutcome(t, res, dedupe.OutcomeDuplicate)
	wantResponse(t, res.Record.Response, resp("one"))

	k2 := key("req-once-released")
	c2 := claim(t, s, k2, fpA, lease)
	if err := s.Release(ctxFor(t), k2, c2.Token); err != nil {
		t.Fatalf("Release: %v", err)
	}
	wantErr(t, "second Release", s.Release(ctxFor(t), k2, c2.Token), dedupe.ErrNotOwner)
	err = s.Commit(ctxFor(t), k2, c2.Token, resp("x"), retention)
	wantErr(t, "Commit after Release", err, dedupe.ErrNotOwner)
	wantErr(t, "Release of unknown token", s.Release(ctxFor(t), key("never"), "no-such-token"), dedupe.ErrNotOwner)
}

func testMismatchCommitted(t *testing.T, e *env) {
	s1, s2 := e.h.Open(t), e.h.Open(t)
	k := key("req-mismatch")
	c := claim(t, s1, k, fpA, lease)
	commit(t, s1, k, c.Token, resp("original"), retention)

	res := reserve(t, s2, k, fpB, lease)
	wantOutcome(t, res, dedupe.OutcomeMismatch)
	if res.Record.State != dedupe.StateCommitted || res.Record.Fingerprint != fpA {
		t.Fatalf("mismatch record = %+v, want committed with %q", res.Record, fpA)
	}
	wantResponse(t, res.Record.Response, resp("original"))
	// The mismatching request changed nothing.
	res = reserve(t, s2, k, fpA, lease)
	wantOutcome(t, res, dedupe.OutcomeDuplicate)
	wantResponse(t, res.Record.Response, resp("original"))
}
