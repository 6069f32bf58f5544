package coordtest

import (
	"context"
	"errors"
	"testing"

	"github.com/wavehouse/wavehouse/internal/coord"
)

func testInvalidName(t *testing.T, e *env) {
	a := e.h.New(t, "a")
	for _, name := range []string{"", "a b", "a.b", "a*", "sweeper/x"} {
		if _, err := a.TryAcquire(t.Context(), name); !errors.Is(err, coord.ErrInvalidName) {
			t.Errorf("TryAcquire(%q) = %v, want coord.ErrInvalidName", name, err)
		}
	}
}

func testResignLetsOtherIn(t *testing.T, e *env) {
	a, b := e.h.New(t, "a"), e.h.New(t, "b")
	ta := mustAcquire(t, a, "sweeper")
	if ta.Holder() != "a" {
		t.Errorf("term.Holder() = %q, want %q", ta.Holder(), "a")
	}
	mustBeHeld(t, b, "sweeper")
	mustBeHeld(t, a, "sweeper") // its own live term counts too

	if err := ta.Resign(t.Context()); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	if !isDone(ta) {
		t.Fatal("Done is not closed after Resign returned")
	}
	if !errors.Is(ta.Err(), coord.ErrResigned) {
		t.Fatalf("Err after Resign = %v, want coord.ErrResigned", ta.Err())
	}
	// No waiting: a resigned lease is free at once.
	tb := mustAcquire(t, b, "sweeper")
	if tb.Token() <= ta.Token() {
		t.Fatalf("token after resign = %d, want > %d", tb.Token(), ta.Token())
	}
	if err := ta.Resign(t.Context()); err != nil {
		t.Fatalf("second Resign of an ended term = %v, want nil", err)
	}
	if isDone(tb) {
		t.Fatal("resigning an ended term ended the new holder's term")
	}
	mustBeHeld(t, a, "sweeper")
}

func testKilledHolderExpires(t *testing.T, e *env) {
	a, b := e.h.New(t, "a"), e.h.New(t, "b")
	ta := mustAcquire(t, a, "sweeper")
	e.h.Kill(t, a)
	killed := e.now()

	var tb coord.Term
	e.eventually(t, "the killed holder's lease is taken over", func() bool {
		tb = tryAcquire(t, b, "sweeper")
		return tb != nil
	})
	took := e.now()
	if got := took.Sub(killed); got < e.h.Lease {
		t.Fatalf("lease taken %s after its holder was killed, want >= lease %s", got, e.h.Lease)
	}
	if e.manual != nil && took.Sub(killed) > e.h.Lease+e.step() {
		t.Fatalf("lease taken %s after its holder was killed, want at lease %s (+ one poll step)", took.Sub(killed), e.h.Lease)
	}
	// The old holder must have stepped down no later than the takeover.
	if !isDone(ta) {
		t.Fatal("killed holder's term is still live after another coordinator took the lease")
	}
	if !errors.Is(ta.Err(), coord.ErrLeaseLost) {
		t.Fatalf("killed holder's Err = %v, want coord.ErrLeaseLost", ta.Err())
	}
	if tb.Token() <= ta.Token() {
		t.Fatalf("takeover token %d, want > %d", tb.Token(), ta.Token())
	}
}

func testContextBoundsCall(t *testing.T, e *env) {
	a, b := e.h.New(t, "a"), e.h.New(t, "b")

	done, cancelDone := context.WithCancel(t.Context())
	cancelDone()
	if _, err := a.TryAcquire(done, "sweeper"); !errors.Is(err, context.Canceled) {
		t.Fatalf("TryAcquire with a cancelled ctx = %v, want context.Canceled", err)
	}
	// The failed call took nothing.
	tb := mustAcquire(t, b, "sweeper")
	if err := tb.Resign(t.Context()); err != nil {
		t.Fatalf("Resign: %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	ta, err := a.TryAcquire(ctx, "sweeper")
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	cancel()
	// Two full leases later the term is still live and still exclusive:
	// the ctx bounded the call, and the holder renews on its own.
	start := e.now()
	for e.now().Sub(start) < 2*e.h.Lease {
		e.pass(e.h.Lease / 4)
		if isDone(ta) {
			t.Fatalf("term ended (%v) after the acquiring ctx was cancelled", ta.Err())
		}
		mustBeHeld(t, b, "sweeper")
	}
	if l, held := holderOf(t, b, "sweeper"); !held || l.Holder != "a" || l.Token != ta.Token() {
		t.Fatalf("Holder = %+v (held %v), want a with token %d", l, held, ta.Token())
	}
}

func testCloseResigns(t *testing.T, e *env) {
	a, b := e.h.New(t, "a"), e.h.New(t, "b")
	t1 := mustAcquire(t, a, "sweeper")
	t2 := mustAcquire(t, a, "compactor")
	if err := a.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, term := range []coord.Term{t1, t2} {
		if !isDone(term) || !errors.Is(term.Err(), coord.ErrResigned) {
			t.Fatalf("term %q after Close: done=%v err=%v, want done with coord.ErrResigned", term.Name(), isDone(term), term.Err())
		}
		// Promptly: no lease duration to wait out.
		nt := mustAcquire(t, b, term.Name())
		if nt.Token() <= term.Token() {
			t.Fatalf("token after Close = %d, want > %d", nt.Token(), term.Token())
		}
	}
	if _, err := a.TryAcquire(t.Context(), "other"); !errors.Is(err, coord.ErrClosed) {
		t.Fatalf("TryAcquire after Close = %v, want coord.ErrClosed", err)
	}
	if hr, ok := a.(coord.HolderReader); ok {
		if _, _, err := hr.Holder(t.Context(), "sweeper"); !errors.Is(err, coord.ErrClosed) {
			t.Fatalf("Holder after Close = %v, want coord.ErrClosed", err)
		}
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatalf("second Close = %v, want nil", err)
	}
}

func testHolderReader(t *testing.T, e *env) {
	a, b := e.h.New(t, "a"), e.h.New(t, "b")
	if l, held := holderOf(t, b, "sweeper"); held {
		t.Fatalf("Holder of a never-acquired lease = %+v, want none", l)
	}
	ta := mustAcquire(t, a, "sweeper")
	// Observed again after at least one renewal.
	for range 2 {
		l, held := holderOf(t, b, "sweeper")
		if !held || l.Holder != "a" || l.Token != ta.Token() || l.Name != "sweeper" {
			t.Fatalf("Holder = %+v (held %v), want sweeper held by a with token %d", l, held, ta.Token())
		}
		e.pass(e.h.Lease / 2)
	}
	if err := ta.Resign(t.Context()); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	// Resigning an ended term is a no-op that leaves its record, so the
	// check below is about a live term; name the cause when it was not.
	if !errors.Is(ta.Err(), coord.ErrResigned) {
		t.Fatalf("the term had ended before Resign (%v), so Resign released nothing", ta.Err())
	}
	if l, held := holderOf(t, b, "sweeper"); held {
		t.Fatalf("Holder after Resign = %+v, want none", l)
	}
}
