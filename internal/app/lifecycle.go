package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Component is one long-lived part of the process. Start acquires what it needs and returns once
// the component can do its job (a listener is bound, a connection is up); Run blocks doing the
// work until ctx ends or Stop is called, and returns nil then; Stop stops accepting work and
// drains what is in flight within ctx's deadline. Every method is called once, in that order.
type Component interface {
	Name() string
	Start(ctx context.Context) error
	Run(ctx context.Context) error
	Stop(ctx context.Context) error
}

// lifecycle runs components: started in slice order, stopped in reverse. The order is the data
// written once in roles.go; nothing else decides it.
type lifecycle struct {
	log        *slog.Logger
	components []Component
	// onStarted runs after every Start succeeded (readiness turns true).
	onStarted func()
	// onStopping runs first at shutdown (readiness turns false).
	onStopping  func()
	stopTimeout time.Duration
}

// FatalError names the component whose failure stopped the process.
type FatalError struct {
	Component string
	Err       error
}

func (e *FatalError) Error() string { return e.Component + ": " + e.Err.Error() }
func (e *FatalError) Unwrap() error { return e.Err }

// run starts every component, runs them until ctx ends or one fails, then stops them in reverse
// order. It returns nil after a clean shutdown requested through ctx, and a *FatalError naming the
// component when one failed to start or failed while running.
func (l *lifecycle) run(ctx context.Context) error {
	started := make([]Component, 0, len(l.components))
	var fatal *FatalError
	for _, c := range l.components {
		l.log.Info("starting component", "component", c.Name())
		if err := c.Start(ctx); err != nil {
			fatal = &FatalError{Component: c.Name(), Err: fmt.Errorf("start: %w", err)}
			break
		}
		started = append(started, c)
	}

	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	failed := make(chan *FatalError, len(started))
	var wg sync.WaitGroup
	if fatal == nil {
		for _, c := range started {
			wg.Go(func() {
				if err := c.Run(runCtx); err != nil && runCtx.Err() == nil {
					failed <- &FatalError{Component: c.Name(), Err: err}
				}
			})
		}
		if l.onStarted != nil {
			l.onStarted()
		}
		l.log.Info("started", "components", len(started))
		select {
		case <-ctx.Done():
			l.log.Info("shutdown requested")
		case fatal = <-failed:
		}
	}
	if fatal != nil {
		l.log.Error("component failed, shutting down", "component", fatal.Component, "error", fatal.Err)
	}

	if l.onStopping != nil {
		l.onStopping()
	}
	stopCtx, cancelStop := context.WithTimeout(context.WithoutCancel(ctx), l.stopTimeout)
	defer cancelStop()
	var stopErrs []error
	for i := len(started) - 1; i >= 0; i-- {
		c := started[i]
		l.log.Info("stopping component", "component", c.Name())
		if err := c.Stop(stopCtx); err != nil {
			l.log.Error("component stop failed", "component", c.Name(), "error", err)
			stopErrs = append(stopErrs, fmt.Errorf("%s: stop: %w", c.Name(), err))
		}
	}
	cancelRun()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-stopCtx.Done():
		stopErrs = append(stopErrs, errors.New("shutdown timeout: some components did not finish"))
	}
	if fatal != nil {
		return fatal
	}
	return errors.Join(stopErrs...)
}
