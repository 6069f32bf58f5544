package app

import (
	"context"
	"sync"
	"sync/atomic"
)

// funcComponent adapts a layer or worker to Component from plain functions. A nil start does
// nothing; a nil run blocks until Stop. Stop first ends Run and waits for it (bounded by ctx),
// then calls stop, so a worker never outlives the layers it uses.
type funcComponent struct {
	name    string
	start   func(ctx context.Context) error
	run     func(ctx context.Context) error
	stop    func(ctx context.Context) error
	once    sync.Once
	stopped chan struct{}
	running atomic.Bool
	runDone chan struct{}
}

func newComponent(name string, start, run, stop func(ctx context.Context) error) *funcComponent {
	return &funcComponent{name: name, start: start, run: run, stop: stop, stopped: make(chan struct{}), runDone: make(chan struct{})}
}

func (c *funcComponent) Name() string { return c.name }

func (c *funcComponent) Start(ctx context.Context) error {
	if c.start == nil {
		return nil
	}
	return c.start(ctx)
}

func (c *funcComponent) Run(ctx context.Context) error {
	c.running.Store(true)
	defer close(c.runDone)
	if c.run == nil {
		select {
		case <-ctx.Done():
		case <-c.stopped:
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.stopped:
			cancel()
		case <-ctx.Done():
		}
	}()
	return c.run(ctx)
}

func (c *funcComponent) Stop(ctx context.Context) error {
	var err error
	c.once.Do(func() {
		close(c.stopped)
		if c.running.Load() {
			select {
			case <-c.runDone:
			case <-ctx.Done():
			}
		}
		if c.stop != nil {
			err = c.stop(ctx)
		}
	})
	return err
}
