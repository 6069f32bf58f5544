package coord

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"
)

// ElectOptions tunes RunElected. The zero value is usable.
type ElectOptions struct {
	// RetryInterval is the pause between two campaigns (after ErrHeld, an
	// unavailable backend, or the end of a term). Default 1s.
	RetryInterval time.Duration
	// CallTimeout bounds each TryAcquire call and the final Resign. Default 5s.
	CallTimeout time.Duration
	// Clock times the pauses. Default SystemClock().
	Clock Clock
	// Logger receives campaign and job errors. Default: discarded.
	Logger *slog.Logger
}

func (o ElectOptions) withDefaults() ElectOptions {
	if o.RetryInterval <= 0 {
		o.RetryInterval = time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 5 * time.Second
	}
	if o.Clock == nil {
		o.Clock = SystemClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// RunElected campaigns for the lease called name and runs fn while holding
// it. fn's ctx is cancelled when the term ends (lost, or ctx cancelled); when
// fn returns, the term is resigned and RunElected campaigns again after
// RetryInterval. fn's error is logged, never fatal: a job that wants to stop
// the process cancels its parent ctx itself.
//
// Because fn learns of the end of its term asynchronously, writes it makes to
// shared systems should carry term.Token() so that late writes are rejected.
//
// RunElected returns nil when ctx ends (after resigning a held term), and an
// error only when campaigning cannot succeed: ErrClosed or ErrInvalidName.
func RunElected(ctx context.Context, c Coordinator, name string, fn func(ctx context.Context, term Term) error, opts ElectOptions) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	opts = opts.withDefaults()
	log := opts.Logger.With("lease", name)
	for {
		if ctx.Err() != nil {
			return nil
		}
		actx, cancel := context.WithTimeout(ctx, opts.CallTimeout)
		term, err := c.TryAcquire(actx, name)
		cancel()
		switch {
		case err == nil:
			runTerm(ctx, term, fn, opts, log)
		case errors.Is(err, ErrClosed), errors.Is(err, ErrInvalidName):
			return err
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrHeld):
		default:
			log.Warn("coord: campaign failed", "error", err)
		}
		t := opts.Clock.NewTimer(opts.RetryInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// runTerm runs fn for one term and resigns the term afterwards.
func runTerm(ctx context.Context, term Term, fn func(context.Context, Term) error, opts ElectOptions, log *slog.Logger) {
	fctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-term.Done():
			cancel()
		case <-fctx.Done():
		}
	})
	err := fn(fctx, term)
	cancel()
	wg.Wait()
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Warn("coord: elected job failed", "token", term.Token(), "error", err)
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), opts.CallTimeout)
	defer rcancel()
	if err := term.Resign(rctx); err != nil {
		log.Warn("coord: resign failed; the lease expires by itself", "token", term.Token(), "error", err)
	}
}
