package coordtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wavehouse/wavehouse/internal/coord"
)

// received reports whether ch has been closed, without blocking.
func received(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func testOneHolderAtATime(t *testing.T, e *env) {
	const rounds = 12
	coords := []coord.Coordinator{e.h.New(t, "a"), e.h.New(t, "b")}
	var (
		mu         sync.Mutex
		active     int
		terms      int
		lastToken  uint64
		violations []string
	)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, c := range coords {
		wg.Go(func() {
			err := coord.RunElected(ctx, c, "sweeper", func(fctx context.Context, term coord.Term) error {
				mu.Lock()
				active++
				terms++
				if active > 1 {
					violations = append(violations, fmt.Sprintf("%s entered (token %d) while another holder was running", term.Holder(), term.Token()))
				}
				if term.Token() <= lastToken {
					violations = append(violations, fmt.Sprintf("token %d after %d", term.Token(), lastToken))
				}
				lastToken = term.Token()
				mu.Unlock()
				defer func() {
					mu.Lock()
					active--
					mu.Unlock()
				}()
				// Hold for half a lease: renewing backends renew at least once.
				tm := e.h.Clock.NewTimer(e.h.Lease / 2)
				defer tm.Stop()
				select {
				case <-fctx.Done():
				case <-tm.C():
				}
				return nil
			}, e.electOptions())
			if err != nil {
				t.Errorf("RunElected: %v", err)
			}
		})
	}
	var sampled uint64
	e.eventually(t, fmt.Sprintf("%d terms ran", rounds), func() bool {
		if l, held := holderOf(t, coords[0], "sweeper"); held {
			if l.Token < sampled {
				t.Errorf("sampled token went back from %d to %d", sampled, l.Token)
			}
			sampled = l.Token
		}
		mu.Lock()
		defer mu.Unlock()
		return terms >= rounds
	})
	cancel()
	wg.Wait()
	for _, v := range violations {
		t.Error(v)
	}
}

func testRunElectedRecampaigns(t *testing.T, e *env) {
	a, b := e.h.New(t, "a"), e.h.New(t, "b")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var (
		mu     sync.Mutex
		tokens []uint64
		faults []string
	)
	result := make(chan error, 1)
	go func() {
		result <- coord.RunElected(ctx, a, "sweeper", func(fctx context.Context, term coord.Term) error {
			mu.Lock()
			defer mu.Unlock()
			tokens = append(tokens, term.Token())
			if isDone(term) || fctx.Err() != nil {
				faults = append(faults, "fn called with an ended term")
			}
			if _, err := b.TryAcquire(fctx, "sweeper"); !errors.Is(err, coord.ErrHeld) {
				faults = append(faults, fmt.Sprintf("other coordinator's TryAcquire during fn = %v, want coord.ErrHeld", err))
			}
			switch len(tokens) {
			case 1:
				return nil
			case 2:
				return errors.New("job failed") // not fatal: campaign again
			default:
				cancel()
				return nil
			}
		}, e.electOptions())
	}()
	var err error
	e.eventually(t, "RunElected returns after its ctx is cancelled", func() bool {
		select {
		case err = <-result:
			return true
		default:
			return false
		}
	})
	if err != nil {
		t.Fatalf("RunElected = %v, want nil after ctx cancellation", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range faults {
		t.Error(f)
	}
	if len(tokens) != 3 {
		t.Fatalf("fn ran %d times, want 3", len(tokens))
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("tokens %v are not strictly increasing", tokens)
		}
	}
	// RunElected resigned on its way out: the lease is free at once.
	if tb := mustAcquire(t, b, "sweeper"); tb.Token() <= tokens[2] {
		t.Fatalf("token after RunElected returned = %d, want > %d", tb.Token(), tokens[2])
	}
}

func testRunElectedLeaseLost(t *testing.T, e *env) {
	a, b := e.h.New(t, "a"), e.h.New(t, "b")
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()

	var aTerm atomic.Pointer[coord.Term]
	aStarted, aStopped := make(chan struct{}), make(chan struct{})
	var aErrAtStop error
	wg.Go(func() {
		err := coord.RunElected(ctx, a, "sweeper", func(fctx context.Context, term coord.Term) error {
			if aTerm.Load() != nil {
				<-fctx.Done()
				return nil
			}
			aTerm.Store(&term)
			close(aStarted)
			<-fctx.Done()
			aErrAtStop = term.Err()
			close(aStopped)
			return nil
		}, e.electOptions())
		if err != nil && !errors.Is(err, coord.ErrClosed) {
			t.Errorf("RunElected(a) = %v", err)
		}
	})
	e.eventually(t, "a runs its job", func() bool { return received(aStarted) })

	var bToken atomic.Uint64
	var overlap atomic.Bool
	bStarted := make(chan struct{})
	wg.Go(func() {
		err := coord.RunElected(ctx, b, "sweeper", func(fctx context.Context, term coord.Term) error {
			if !isDone(*aTerm.Load()) {
				overlap.Store(true)
			}
			if bToken.CompareAndSwap(0, term.Token()) {
				close(bStarted)
			}
			<-fctx.Done()
			return nil
		}, e.electOptions())
		if err != nil {
			t.Errorf("RunElected(b) = %v", err)
		}
	})

	e.h.Kill(t, a)
	e.eventually(t, "a's job is cancelled after its lease is lost", func() bool { return received(aStopped) })
	if !errors.Is(aErrAtStop, coord.ErrLeaseLost) {
		t.Fatalf("a's term Err when its job was cancelled = %v, want coord.ErrLeaseLost", aErrAtStop)
	}
	e.eventually(t, "b runs the job", func() bool { return received(bStarted) })
	if overlap.Load() {
		t.Fatal("b's job started while a's term was still live")
	}
	if got, old := bToken.Load(), (*aTerm.Load()).Token(); got <= old {
		t.Fatalf("b's token %d, want > a's %d", got, old)
	}
}

func testRunElectedResignsOnCancel(t *testing.T, e *env) {
	a, b := e.h.New(t, "a"), e.h.New(t, "b")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := make(chan coord.Term, 1)
	result := make(chan error, 1)
	go func() {
		result <- coord.RunElected(ctx, a, "sweeper", func(fctx context.Context, term coord.Term) error {
			started <- term
			<-fctx.Done()
			return fctx.Err()
		}, e.electOptions())
	}()
	var term coord.Term
	e.eventually(t, "the job starts", func() bool {
		select {
		case term = <-started:
			return true
		default:
			return false
		}
	})
	mustBeHeld(t, b, "sweeper")
	cancel()
	var err error
	e.eventually(t, "RunElected returns", func() bool {
		select {
		case err = <-result:
			return true
		default:
			return false
		}
	})
	if err != nil {
		t.Fatalf("RunElected = %v, want nil", err)
	}
	if !isDone(term) || !errors.Is(term.Err(), coord.ErrResigned) {
		t.Fatalf("term after RunElected returned: done=%v err=%v, want resigned", isDone(term), term.Err())
	}
	if tb := mustAcquire(t, b, "sweeper"); tb.Token() <= term.Token() {
		t.Fatalf("token = %d, want > %d", tb.Token(), term.Token())
	}
}
