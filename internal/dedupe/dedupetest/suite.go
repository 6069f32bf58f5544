// Package dedupetest is the conformance suite for dedupe.Store implementations. Every backend
// runs it from its own conformance_test.go against a real backend:
//
//	dedupetest.Run(t, newHarness, dedupetest.Caps{...})
//
// Time is injected: the suite hands the harness a Clock it controls and moves it forward to
// end leases and retentions, so no test sleeps.
package dedupetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// Caps declares what a backend can do beyond the common contract.
type Caps struct {
	// IndependentClients is true when each Harness.Open returns a separate client (its own
	// connection) over the shared records, as with a networked backend. When false, Open may
	// return the same handle again and the multi-client tests exercise concurrency within one
	// handle.
	IndependentClients bool
	// Outage is true when Harness.StopBackend can make the backend unreachable.
	Outage bool
	// Sweeper is true when the store implements dedupe.Sweeper.
	Sweeper bool
}

// Harness gives the suite clients over one backend instance that starts empty.
type Harness interface {
	// Open returns a client using the clock given to NewHarness. Every client of one harness
	// sees the same records. Open after all earlier clients were closed reopens the backend's
	// persisted state. The harness closes whatever is still open in t.Cleanup.
	Open(t *testing.T) dedupe.Store
	// StopBackend makes the backend unreachable for the clients already open. Called only
	// when Caps.Outage is true.
	StopBackend(t *testing.T)
}

// HarnessOptions tells NewHarness what the test will do with the harness.
type HarnessOptions struct {
	// Private is true when the test will call StopBackend, so the backend must be one owned by
	// this harness rather than a server shared with other tests.
	Private bool
}

// NewHarness builds a fresh Harness for one test, using clock for every client it opens.
type NewHarness func(t *testing.T, clock dedupe.Clock, opts HarnessOptions) Harness

// Run runs the whole suite.
func Run(t *testing.T, newHarness NewHarness, caps Caps) {
	type test struct {
		name    string
		fn      func(t *testing.T, e *env)
		private bool
	}
	tests := []test{
		{name: "ReserveCommitReplaysResponse", fn: testReserveCommitReplays},
		{name: "ReleaseMakesKeyClaimable", fn: testReleaseMakesClaimable},
		{name: "LiveLeaseBlocksSecondClient", fn: testLiveLeaseBlocks},
		{name: "ExpiredLeaseIsReclaimable", fn: testExpiredLeaseReclaimable},
		{name: "CommitAfterLeaseEndWithoutReclaim", fn: testCommitAfterLeaseEnd},
		{name: "RetentionExpiryMakesKeyNew", fn: testRetentionExpiry},
		{name: "StaleReleaseKeepsNewerClaim", fn: testStaleRelease},
		{name: "StaleCommitKeepsNewerClaim", fn: testStaleCommit},
		{name: "CommitAndReleaseOnlyOnce", fn: testCommitReleaseOnce},
		{name: "MismatchCommitted", fn: testMismatchCommitted},
		{name: "ConcurrentReservesOneWinner", fn: testConcurrentReserves},
		{name: "KeysIsolatedByTenantAndTable", fn: testIsolation},
		{name: "LongAndOddKeys", fn: testOddKeys},
		{name: "ResponseBodyIsCopied", fn: testBodyCopied},
		{name: "GetMissing", fn: testGetMissing},
		{name: "InvalidArguments", fn: testInvalidArguments},
		{name: "CanceledContext", fn: testCanceledContext},
		{name: "CommittedSurvivesReopen", fn: testReopen},
		{name: "Closed", fn: testClosed},
		{name: "MarkCarriedToNextClaim", fn: testMarkCarriedToNextClaim},
		{name: "MarkLapsed", fn: testMarkLapsed},
		{name: "ReleaseKeepsMark", fn: testReleaseKeepsMark},
		{name: "MarkBatch", fn: testMarkBatch},
	}
	if caps.Sweeper {
		tests = append(tests, test{name: "SweepRemovesOnlyExpired", fn: testSweep},
			test{name: "SweepKeepsMarked", fn: testSweepKeepsMarked})
	}
	if caps.Outage {
		tests = append(tests, test{name: "BackendDownIsUnavailable", fn: testBackendDown, private: true})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
			e := &env{h: newHarness(t, clock, HarnessOptions{Private: tc.private}), clock: clock, caps: caps}
			tc.fn(t, e)
		})
	}
}

// env is the per-test state handed to each test.
type env struct {
	h     Harness
	clock *Clock
	caps  Caps
}

// Clock is a manually advanced dedupe.Clock. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Fixed arguments used throughout the suite.
const (
	lease     = 30 * time.Second
	retention = 24 * time.Hour
	fpA       = "fingerprint-a"
	fpB       = "fingerprint-b"
)

func key(id string) dedupe.Key {
	return dedupe.Key{Tenant: "acme", Table: "events", ID: id}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// reserve calls Reserve and fails the test on error.
func reserve(t *testing.T, s dedupe.Store, k dedupe.Key, fp string, l time.Duration) dedupe.Reservation {
	t.Helper()
	res, err := s.Reserve(ctxFor(t), k, fp, l)
	if err != nil {
		t.Fatalf("Reserve(%v): %v", k, err)
	}
	return res
}

// claim calls Reserve and fails the test unless the key is claimed.
func claim(t *testing.T, s dedupe.Store, k dedupe.Key, fp string, l time.Duration) dedupe.Claim {
	t.Helper()
	res := reserve(t, s, k, fp, l)
	if res.Outcome != dedupe.OutcomeClaimed {
		t.Fatalf("Reserve(%v) outcome = %v, want claimed", k, res.Outcome)
	}
	if res.Claim.Token == "" {
		t.Fatalf("Reserve(%v) claimed with an empty token", k)
	}
	return res.Claim
}

func commit(t *testing.T, s dedupe.Store, k dedupe.Key, token string, resp dedupe.Response, r time.Duration) {
	t.Helper()
	if err := s.Commit(ctxFor(t), k, token, resp, r); err != nil {
		t.Fatalf("Commit(%v): %v", k, err)
	}
}

func wantOutcome(t *testing.T, res dedupe.Reservation, want dedupe.Outcome) {
	t.Helper()
	if res.Outcome != want {
		t.Fatalf("outcome = %v, want %v (reservation %+v)", res.Outcome, want, res)
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: error = %v, want %v", what, err, want)
	}
}

func wantTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func resp(body string) dedupe.Response {
	return dedupe.Response{Status: 202, Body: []byte(body)}
}

func wantResponse(t *testing.T, got, want dedupe.Response) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("response = %d %q, want %d %q", got.Status, got.Body, want.Status, want.Body)
	}
}
