package coord_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/coord"
	"github.com/wavehouse/wavehouse/internal/coord/coordtest"
	"github.com/wavehouse/wavehouse/internal/coord/localcoord"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestValidateName(t *testing.T) {
	long := make([]byte, 129)
	for i := range long {
		long[i] = 'a'
	}
	for _, ok := range []string{"sweeper", "a", "A-b_9", string(long[:128])} {
		if err := coord.ValidateName(ok); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "a.b", "a b", "a/b", "ä", string(long)} {
		if err := coord.ValidateName(bad); !errors.Is(err, coord.ErrInvalidName) {
			t.Errorf("ValidateName(%q) = %v, want coord.ErrInvalidName", bad, err)
		}
	}
}

func newLocal(t *testing.T, table *localcoord.Table, clock coord.Clock, instance string) *localcoord.Coordinator {
	t.Helper()
	c, err := localcoord.New(localcoord.Config{}, localcoord.Deps{Table: table, Clock: clock, Instance: instance})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func TestRunElectedRejectsInvalidName(t *testing.T) {
	c := newLocal(t, nil, nil, "a")
	called := false
	err := coord.RunElected(t.Context(), c, "no good", func(context.Context, coord.Term) error {
		called = true
		return nil
	}, coord.ElectOptions{})
	if !errors.Is(err, coord.ErrInvalidName) || called {
		t.Fatalf("RunElected = %v (fn called %v), want coord.ErrInvalidName without calling fn", err, called)
	}
}

func TestRunElectedStopsOnClosedCoordinator(t *testing.T) {
	c := newLocal(t, nil, nil, "a")
	if err := c.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	err := coord.RunElected(t.Context(), c, "sweeper", func(context.Context, coord.Term) error { return nil }, coord.ElectOptions{})
	if !errors.Is(err, coord.ErrClosed) {
		t.Fatalf("RunElected on a closed coordinator = %v, want coord.ErrClosed", err)
	}
}

// TestRunElectedCampaignsUntilFree keeps a candidate campaigning against a
// held lease: fn never runs while the lease is held, and runs once the
// holder resigns, on the next retry.
func TestRunElectedCampaignsUntilFree(t *testing.T) {
	clock := coordtest.NewManualClock(time.Unix(0, 0))
	table := localcoord.NewTable()
	holder := newLocal(t, table, clock, "holder")
	held, err := holder.TryAcquire(t.Context(), "sweeper")
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	candidate := newLocal(t, table, clock, "candidate")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := make(chan uint64, 1)
	result := make(chan error, 1)
	go func() {
		result <- coord.RunElected(ctx, candidate, "sweeper", func(fctx context.Context, term coord.Term) error {
			ran <- term.Token()
			<-fctx.Done()
			return nil
		}, coord.ElectOptions{RetryInterval: time.Second, Clock: clock})
	}()
	for range 5 {
		clock.Advance(time.Second)
		select {
		case tok := <-ran:
			t.Fatalf("fn ran with token %d while the lease was held", tok)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := held.Resign(t.Context()); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		clock.Advance(time.Second)
		select {
		case tok := <-ran:
			if tok <= held.Token() {
				t.Fatalf("token %d, want > %d", tok, held.Token())
			}
			done = true
		case <-deadline:
			t.Fatal("fn never ran after the lease was freed")
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	if err := <-result; err != nil {
		t.Fatalf("RunElected = %v, want nil", err)
	}
}
