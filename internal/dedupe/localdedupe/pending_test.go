package localdedupe

import (
	"fmt"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/dedupe/dedupetest"
)

func newTestStore(t *testing.T, clock dedupe.Clock) *Store {
	t.Helper()
	s, err := New(Config{Dir: t.TempDir()}, Deps{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(t.Context()) })
	return s
}

func (s *Store) cached() int {
	n := 0
	for i := range s.shards {
		s.shards[i].mu.Lock()
		n += len(s.shards[i].pending)
		s.shards[i].mu.Unlock()
	}
	return n
}

func (s *Store) storedKeys(t *testing.T) int {
	t.Helper()
	it, err := s.db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestClaimsAreWrittenOnlyWhenMarked: a claim is kept in memory, where it blocks a second
// Reserve, and reaches Pebble only with its mark or its commit; after a restart an unmarked
// claim is gone (its request was never published) and a marked one is still there.
func TestClaimsAreWrittenOnlyWhenMarked(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Config{Dir: dir}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	k := func(i int) dedupe.Key { return dedupe.Key{Tenant: "t", Table: "e", ID: fmt.Sprint("k", i)} }
	tokens := make([]string, 3)
	for i := range tokens {
		res, err := s.Reserve(ctx, k(i), "fp", time.Minute)
		if err != nil || res.Outcome != dedupe.OutcomeClaimed {
			t.Fatalf("Reserve %d = %v, %v", i, res.Outcome, err)
		}
		tokens[i] = res.Claim.Token
		if again, err := s.Reserve(ctx, k(i), "fp", time.Minute); err != nil || again.Outcome != dedupe.OutcomeInFlight {
			t.Fatalf("second Reserve %d = %v, %v, want in flight", i, again.Outcome, err)
		}
	}
	if n := s.storedKeys(t); n != 0 {
		t.Fatalf("%d records in Pebble after 3 claims, want 0", n)
	}
	if errs := s.Mark(ctx, "frame-1", time.Now().Add(time.Hour), []dedupe.Owned{{Key: k(1), Token: tokens[1]}}); errs[0] != nil {
		t.Fatalf("Mark: %v", errs[0])
	}
	if err := s.Commit(ctx, k(2), tokens[2], dedupe.Response{Status: 200, Body: []byte("ok")}, time.Hour); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if n := s.storedKeys(t); n != 2 {
		t.Fatalf("%d records in Pebble after a mark and a commit, want 2", n)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s, err = New(Config{Dir: dir}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(t.Context()) })
	if res, err := s.Reserve(ctx, k(0), "fp", time.Minute); err != nil || res.Outcome != dedupe.OutcomeClaimed {
		t.Fatalf("Reserve of the unmarked claim's key after a restart = %v, %v, want claimed at once", res.Outcome, err)
	}
	if res, err := s.Reserve(ctx, k(1), "fp", time.Minute); err != nil || res.Outcome != dedupe.OutcomeInFlight {
		t.Fatalf("Reserve of the marked claim's key after a restart = %v, %v, want in flight until its lease ends", res.Outcome, err)
	}
	// The earlier Store's marked claim is in Pebble, so its token still releases it, keeping the mark.
	if err := s.Release(ctx, k(1), tokens[1]); err != nil {
		t.Fatalf("Release of the earlier Store's marked claim: %v", err)
	}
	res, err := s.Reserve(ctx, k(1), "fp", time.Minute)
	if err != nil || res.Outcome != dedupe.OutcomeClaimed || res.Claim.Frame != "frame-1" {
		t.Fatalf("Reserve after the release = %v frame %q, %v; want a claim inheriting frame-1", res.Outcome, res.Claim.Frame, err)
	}
	if res, err := s.Reserve(ctx, k(2), "fp", time.Minute); err != nil || res.Outcome != dedupe.OutcomeDuplicate {
		t.Fatalf("Reserve of the committed key after a restart = %v, %v, want the duplicate", res.Outcome, err)
	}
}

// TestSweepPrunesLapsedClaims: a claim never settled is ended by the sweep once its lease
// lapsed, and its marked record is still there for the next owner.
func TestSweepPrunesLapsedClaims(t *testing.T) {
	clock := dedupetest.NewClock(time.Unix(1_700_000_000, 0))
	s := newTestStore(t, clock)
	ctx := t.Context()
	k := dedupe.Key{Tenant: "t", Table: "e", ID: "abandoned"}
	res, err := s.Reserve(ctx, k, "fp", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if errs := s.Mark(ctx, "frame-9", clock.Now().Add(time.Hour), []dedupe.Owned{{Key: k, Token: res.Claim.Token}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if _, err := s.Sweep(ctx, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got := s.cached(); got != 1 {
		t.Fatalf("%d claims held while the lease is live, want 1", got)
	}
	clock.Advance(11 * time.Second)
	if _, err := s.Sweep(ctx, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got := s.cached(); got != 0 {
		t.Fatalf("%d claims held after the lease lapsed and a sweep, want 0", got)
	}
	next, err := s.Reserve(ctx, k, "fp", 10*time.Second)
	if err != nil || next.Outcome != dedupe.OutcomeClaimed || next.Claim.Frame != "frame-9" {
		t.Fatalf("Reserve after the prune = %v frame %q, %v; want a claim that inherits frame-9", next.Outcome, next.Claim.Frame, err)
	}
}
