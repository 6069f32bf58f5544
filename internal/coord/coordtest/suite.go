// Package coordtest is the conformance suite of the coordination layer.
// Every coord backend runs it from its own conformance_test.go against a
// real backend:
//
//	coordtest.Run(t, newHarness, coordtest.Caps{...})
package coordtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/coord"
)

// Harness connects the suite to one backend. newHarness is called once per
// subtest and must isolate it (fresh table, unique bucket name, …).
type Harness struct {
	// New returns a coordinator over this harness's backend that holds
	// leases as instance. Coordinators returned by New share the backend.
	// The harness closes them at cleanup.
	New func(t *testing.T, instance string) coord.Coordinator
	// Kill makes c stop renewing its leases without resigning them, as a
	// crashed or partitioned process would.
	Kill func(t *testing.T, c coord.Coordinator)
	// Lease is the lease duration the coordinators were configured with.
	Lease time.Duration
	// Clock is the clock the coordinators use. With Caps.ManualClock it
	// must be a *ManualClock, which the suite advances.
	Clock coord.Clock
}

// Caps names the abilities in which backends legitimately differ.
type Caps struct {
	// ManualClock reports that every lease timing of the backend follows
	// Harness.Clock, a *ManualClock, so expiry is tested exactly and
	// without waiting. Without it the suite runs on the real clock and
	// keeps its timing assertions one-sided (never before the lease).
	ManualClock bool
}

// Run runs the conformance suite.
func Run(t *testing.T, newHarness func(t *testing.T) *Harness, caps Caps) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"InvalidName", testInvalidName},
		{"ResignLetsOtherIn", testResignLetsOtherIn},
		{"OneHolderAtATime", testOneHolderAtATime},
		{"KilledHolderExpiresAfterLease", testKilledHolderExpires},
		{"ContextBoundsCallNotTerm", testContextBoundsCall},
		{"CloseResigns", testCloseResigns},
		{"HolderReader", testHolderReader},
		{"RunElectedRecampaigns", testRunElectedRecampaigns},
		{"RunElectedStopsFnWhenLeaseLost", testRunElectedLeaseLost},
		{"RunElectedResignsOnCancel", testRunElectedResignsOnCancel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			e := &env{h: h, caps: caps}
			if caps.ManualClock {
				mc, ok := h.Clock.(*ManualClock)
				if !ok {
					t.Fatalf("Caps.ManualClock set but Harness.Clock is %T, not *ManualClock", h.Clock)
				}
				e.manual = mc
			}
			tc.fn(t, e)
		})
	}
}

// env wraps a harness with the suite's timing helpers.
type env struct {
	h      *Harness
	caps   Caps
	manual *ManualClock
}

// now reads the coordinators' clock.
func (e *env) now() time.Time { return e.h.Clock.Now() }

// pass lets d elapse on the coordinators' clock: a manual clock is advanced
// (then the goroutines it woke get a moment of real time), the real clock is
// waited on.
func (e *env) pass(d time.Duration) {
	if e.manual != nil {
		e.manual.Advance(d)
		realWait(2 * time.Millisecond)
		return
	}
	realWait(d)
}

// step is the polling granularity on the coordinators' clock.
func (e *env) step() time.Duration { return e.h.Lease / 20 }

// realTimeout bounds polling loops in real time.
func (e *env) realTimeout() time.Duration {
	if e.manual != nil {
		return 20 * time.Second
	}
	return 20*e.h.Lease + 10*time.Second
}

// eventually polls cond, letting step pass on the clock between polls, and
// fails the test if cond is still false after the real-time bound.
func (e *env) eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(e.realTimeout())
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		e.pass(e.step())
	}
}

// electOptions are RunElected options suited to the harness's clock.
func (e *env) electOptions() coord.ElectOptions {
	return coord.ElectOptions{
		RetryInterval: e.h.Lease / 10,
		CallTimeout:   5 * time.Second,
		Clock:         e.h.Clock,
	}
}

// realWait blocks for d of real time; it paces polling loops, it never
// stands in for synchronisation.
func realWait(d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	<-tm.C
}

// mustAcquire acquires name on c or fails the test.
func mustAcquire(t *testing.T, c coord.Coordinator, name string) coord.Term {
	t.Helper()
	term, err := c.TryAcquire(t.Context(), name)
	if err != nil {
		t.Fatalf("TryAcquire(%q): %v", name, err)
	}
	if term.Name() != name {
		t.Fatalf("term.Name() = %q, want %q", term.Name(), name)
	}
	if term.Err() != nil {
		t.Fatalf("fresh term has Err %v", term.Err())
	}
	return term
}

// mustBeHeld asserts that TryAcquire on c reports ErrHeld.
func mustBeHeld(t *testing.T, c coord.Coordinator, name string) {
	t.Helper()
	term, err := c.TryAcquire(t.Context(), name)
	if err == nil {
		t.Fatalf("TryAcquire(%q) succeeded with token %d while the lease is held", name, term.Token())
	}
	if !errors.Is(err, coord.ErrHeld) {
		t.Fatalf("TryAcquire(%q) = %v, want coord.ErrHeld", name, err)
	}
}

// isDone reports whether term has ended.
func isDone(term coord.Term) bool {
	select {
	case <-term.Done():
		return true
	default:
		return false
	}
}

// tryAcquire makes one attempt, treating ErrHeld as "not yet" and anything
// else as a test failure.
func tryAcquire(t *testing.T, c coord.Coordinator, name string) coord.Term {
	t.Helper()
	term, err := c.TryAcquire(t.Context(), name)
	switch {
	case err == nil:
		return term
	case errors.Is(err, coord.ErrHeld):
		return nil
	default:
		t.Fatalf("TryAcquire(%q): %v", name, err)
		return nil
	}
}

// holderOf reads the current holder through the optional HolderReader.
func holderOf(t *testing.T, c coord.Coordinator, name string) (coord.Lease, bool) {
	t.Helper()
	hr, ok := c.(coord.HolderReader)
	if !ok {
		t.Fatalf("%T does not implement coord.HolderReader", c)
	}
	l, held, err := hr.Holder(context.WithoutCancel(t.Context()), name)
	if err != nil {
		t.Fatalf("Holder(%q): %v", name, err)
	}
	return l, held
}
