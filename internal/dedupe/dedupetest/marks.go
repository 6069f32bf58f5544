package dedupetest

import (
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// frameWindow is how long the suite's marks stay resolvable: longer than the lease, as the
// queue's duplicate window is longer than the api's lease.
const frameWindow = 2 * time.Minute

// mark calls Mark and fails the test unless every claim was marked.
func mark(t *testing.T, s dedupe.Store, frame string, until time.Time, claims ...dedupe.Owned) {
	t.Helper()
	for i, err := range s.Mark(ctxFor(t), frame, until, claims) {
		if err != nil {
			t.Fatalf("Mark(%s) claim %d (%v): %v", frame, i, claims[i].Key, err)
		}
	}
}

// wantFrame checks the mark a claim took over.
func wantFrame(t *testing.T, what string, c dedupe.Claim, frame string, until time.Time) {
	t.Helper()
	if c.Frame != frame {
		t.Fatalf("%s: Claim.Frame = %q, want %q", what, c.Frame, frame)
	}
	if frame != "" {
		wantTime(t, what+": Claim.FrameUntil", c.FrameUntil, until)
	}
}

// testMarkCarriedToNextClaim: a claim marked with a frame whose lease lapses (the process died
// between marking and committing) hands the frame to the next claim, with the fingerprint
// checks unchanged; a new mark replaces it and a commit ends it.
func testMarkCarriedToNextClaim(t *testing.T, e *env) {
	s1, s2 := e.h.Open(t), e.h.Open(t)
	k := key("req-marked")
	c := claim(t, s1, k, fpA, lease)
	until := e.clock.Now().Add(frameWindow)
	mark(t, s1, "frame-1", until, dedupe.Owned{Key: k, Token: c.Token})
	rec, err := s2.Get(ctxFor(t), k)
	if err != nil || rec.Frame != "frame-1" {
		t.Fatalf("Get marked claim = %+v, %v; want frame-1", rec, err)
	}
	wantTime(t, "Record.FrameUntil", rec.FrameUntil, until)

	// While the lease runs the mark changes nothing for others.
	wantOutcome(t, reserve(t, s2, k, fpA, lease), dedupe.OutcomeInFlight)
	wantOutcome(t, reserve(t, s2, k, fpB, lease), dedupe.OutcomeMismatch)

	e.clock.Advance(lease)
	c2 := claim(t, s2, k, fpA, lease)
	wantFrame(t, "claim over the lapsed marked claim", c2, "frame-1", until)
	// The old owner is fenced off: its token neither marks nor commits.
	if errs := s1.Mark(ctxFor(t), "frame-stale", until, []dedupe.Owned{{Key: k, Token: c.Token}}); len(errs) != 1 {
		t.Fatalf("Mark returned %d errors for 1 claim", len(errs))
	} else {
		wantErr(t, "Mark by the old owner", errs[0], dedupe.ErrNotOwner)
	}
	wantErr(t, "Commit by the old owner", s1.Commit(ctxFor(t), k, c.Token, resp("old"), retention), dedupe.ErrNotOwner)

	// The new owner's claim lapses too before it marks: the mark is still carried.
	e.clock.Advance(lease)
	c3 := claim(t, s1, k, fpA, lease)
	wantFrame(t, "second take-over", c3, "frame-1", until)

	until2 := e.clock.Now().Add(frameWindow)
	mark(t, s1, "frame-2", until2, dedupe.Owned{Key: k, Token: c3.Token})
	e.clock.Advance(lease)
	c4 := claim(t, s2, k, fpA, lease)
	wantFrame(t, "claim after a new mark", c4, "frame-2", until2)

	commit(t, s2, k, c4.Token, resp("done"), time.Minute)
	rec, err = s1.Get(ctxFor(t), k)
	if err != nil || rec.Frame != "" {
		t.Fatalf("Get committed = %+v, %v; want no frame", rec, err)
	}
	e.clock.Advance(time.Minute)
	wantFrame(t, "claim over an expired committed record", claim(t, s1, k, fpB, lease), "", time.Time{})
}

// testReleaseKeepsMark: releasing a marked claim (its publish failed with an unknown outcome)
// frees the key at once but keeps the frame for the next owner to resolve.
func testReleaseKeepsMark(t *testing.T, e *env) {
	s := e.h.Open(t)
	k := key("req-released-marked")
	c := claim(t, s, k, fpA, lease)
	until := e.clock.Now().Add(frameWindow)
	mark(t, s, "frame-r", until, dedupe.Owned{Key: k, Token: c.Token})
	if err := s.Release(ctxFor(t), k, c.Token); err != nil {
		t.Fatalf("Release marked claim: %v", err)
	}
	_, err := s.Get(ctxFor(t), k)
	wantErr(t, "Get after releasing a marked claim", err, dedupe.ErrNotFound)
	wantErr(t, "second Release", s.Release(ctxFor(t), k, c.Token), dedupe.ErrNotOwner)
	c2 := claim(t, s, k, fpA, lease)
	wantFrame(t, "claim after release", c2, "frame-r", until)
	if err := s.Release(ctxFor(t), k, c2.Token); err != nil {
		t.Fatalf("Release: %v", err)
	}
	wantFrame(t, "claim after a second release", claim(t, s, k, fpA, lease), "frame-r", until)
}

// testMarkBatch: one Mark over several claims marks every owned one and reports the others,
// one error per claim, in order; a mark ends at its FrameUntil.
func testMarkBatch(t *testing.T, e *env) {
	s := e.h.Open(t)
	var owned []dedupe.Owned
	for _, id := range []string{"batch-a", "batch-b", "batch-c", "batch-d"} {
		owned = append(owned, dedupe.Owned{Key: key(id), Token: claim(t, s, key(id), fpA, lease).Token})
	}
	owned[1].Token = "not-the-token"
	if err := s.Release(ctxFor(t), owned[3].Key, owned[3].Token); err != nil {
		t.Fatalf("Release: %v", err)
	}
	until := e.clock.Now().Add(lease + time.Second)
	errs := s.Mark(ctxFor(t), "frame-b", until, owned)
	if len(errs) != len(owned) {
		t.Fatalf("Mark returned %d errors for %d claims", len(errs), len(owned))
	}
	for i, want := range []error{nil, dedupe.ErrNotOwner, nil, dedupe.ErrNotOwner} {
		wantErr(t, "Mark of claim "+owned[i].Key.ID, errs[i], want)
	}
	e.clock.Advance(lease)
	wantFrame(t, "marked claim a", claim(t, s, owned[0].Key, fpA, lease), "frame-b", until)
	wantFrame(t, "unmarked claim b", claim(t, s, owned[1].Key, fpA, lease), "", time.Time{})
	e.clock.Advance(time.Second)
	// Claim c lapsed at the exact end of its mark: nothing is carried any more.
	wantFrame(t, "claim c after FrameUntil", claim(t, s, owned[2].Key, fpA, lease), "", time.Time{})
	wantErr(t, "Mark with no frame", s.Mark(ctxFor(t), "", until, owned[:1])[0], dedupe.ErrInvalid)
}

// testSweepKeepsMarked: a lapsed marked claim is kept by the sweeper until LapsedMarkMemory
// after its mark ends (so that a late retry is still told MarkLapsed), then removed.
func testSweepKeepsMarked(t *testing.T, e *env) {
	s := e.h.Open(t)
	sw := s.(dedupe.Sweeper)
	k := key("swept-marked")
	c := claim(t, s, k, fpA, lease)
	until := e.clock.Now().Add(frameWindow)
	mark(t, s, "frame-s", until, dedupe.Owned{Key: k, Token: c.Token})
	e.clock.Advance(lease)
	if removed, err := sw.Sweep(ctxFor(t), e.clock.Now()); err != nil || removed != 0 {
		t.Fatalf("Sweep with the mark resolvable = %d, %v; want 0, nil", removed, err)
	}
	e.clock.Advance(frameWindow - lease)
	if removed, err := sw.Sweep(ctxFor(t), e.clock.Now()); err != nil || removed != 0 {
		t.Fatalf("Sweep right after the mark ended = %d, %v; want 0, nil (kept to report MarkLapsed)", removed, err)
	}
	e.clock.Advance(dedupe.LapsedMarkMemory - time.Millisecond)
	if removed, err := sw.Sweep(ctxFor(t), e.clock.Now()); err != nil || removed != 0 {
		t.Fatalf("Sweep just before LapsedMarkMemory passed = %d, %v; want 0, nil", removed, err)
	}
	e.clock.Advance(time.Millisecond)
	if removed, err := sw.Sweep(ctxFor(t), e.clock.Now()); err != nil || removed != 1 {
		t.Fatalf("Sweep LapsedMarkMemory after the mark ended = %d, %v; want 1, nil", removed, err)
	}
	wantFrame(t, "claim after the sweep", claim(t, s, k, fpA, lease), "", time.Time{})
}

// testMarkLapsed: a claim over a marked claim whose mark can no longer be resolved inherits no
// frame and says so (MarkLapsed: its earlier attempt may be enqueued); a claim over a lapsed
// unmarked claim, over a live mark or over nothing does not.
func testMarkLapsed(t *testing.T, e *env) {
	s := e.h.Open(t)
	k := key("req-mark-lapsed")
	if res := reserve(t, s, k, fpA, lease); res.Outcome != dedupe.OutcomeClaimed || res.MarkLapsed {
		t.Fatalf("first claim = %+v, want claimed without MarkLapsed", res)
	}
	e.clock.Advance(lease)
	res := reserve(t, s, k, fpA, lease) // over a lapsed, unmarked claim
	if res.Outcome != dedupe.OutcomeClaimed || !res.Reclaimed || res.MarkLapsed {
		t.Fatalf("claim over an unmarked lapsed claim = %+v, want reclaimed without MarkLapsed", res)
	}
	until := e.clock.Now().Add(frameWindow)
	mark(t, s, "frame-lapsing", until, dedupe.Owned{Key: k, Token: res.Claim.Token})
	e.clock.Advance(lease)
	res = reserve(t, s, k, fpA, lease) // the mark is still resolvable: carried, not lapsed
	if res.MarkLapsed || res.Claim.Frame != "frame-lapsing" {
		t.Fatalf("claim over a live mark = %+v, want the frame carried without MarkLapsed", res)
	}
	e.clock.Advance(frameWindow)
	if sw, ok := s.(dedupe.Sweeper); ok {
		// The sweeper keeps the lapsed mark, so that the retry is still told.
		if _, err := sw.Sweep(ctxFor(t), e.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	res = reserve(t, s, k, fpA, lease)
	if res.Outcome != dedupe.OutcomeClaimed || !res.MarkLapsed || res.Claim.Frame != "" {
		t.Fatalf("claim over a lapsed mark = %+v, want claimed with MarkLapsed and no frame", res)
	}
	e.clock.Advance(lease)
	if res := reserve(t, s, k, fpA, lease); res.MarkLapsed {
		t.Fatalf("the claim after the MarkLapsed one = %+v: it carried no mark, so nothing lapsed", res)
	}
}
