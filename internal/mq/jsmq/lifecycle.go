package jsmq

import (
	"context"
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// OpenFunc connects a backend and builds its Queue over the connection, topology reconciled or
// verified. It returns release, which closes what it opened (the connection, and the server
// behind an embedded one), also with an error when it opened anything before failing. metrics is
// nil when the backend has no Registerer; it goes into Options.Metrics.
type OpenFunc func(ctx context.Context, metrics *Metrics) (q *Queue, release func(), err error)

// Lifecycle is the Start, Run and Close both JetStream backends share, over the Handle they
// expose: Start opens once and is refused after Close, Run starts and blocks until its context
// ends, Close marks the handle closed once and releases the connection. A backend embeds a
// *Lifecycle from NewLifecycle.
type Lifecycle struct {
	Handle
	open OpenFunc
	reg  prometheus.Registerer

	mu      sync.Mutex
	release func() // set by a successful Start
}

// NewLifecycle returns the lifecycle of a backend whose Start calls open; reg, when not nil,
// receives the queue's metrics at Start.
func NewLifecycle(reg prometheus.Registerer, open OpenFunc) *Lifecycle {
	return &Lifecycle{open: open, reg: reg}
}

// Start opens the backend, registers its metrics and installs the queue behind the handle; on
// any failure it releases what was opened. It is idempotent, and fails with mq.ErrClosed after
// Close.
func (l *Lifecycle) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.Handle.Queue(); errors.Is(err, mq.ErrClosed) {
		return err
	}
	if l.release != nil {
		return nil
	}
	var metrics *Metrics
	if l.reg != nil {
		metrics = NewMetrics()
	}
	q, release, err := l.open(ctx, metrics)
	if err == nil && metrics != nil {
		err = metrics.Register(l.reg, q)
	}
	if err == nil {
		err = l.Handle.Install(q)
	}
	if err != nil {
		if release != nil {
			release()
		}
		return err
	}
	q.ReportExtra(ctx)
	l.release = release
	return nil
}

// Run starts the backend if needed and blocks until ctx ends.
func (l *Lifecycle) Run(ctx context.Context) error {
	if err := l.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// Close ends subscriptions and releases the connection (for the embedded backend, shutting the
// server down and flushing its store). It is idempotent.
func (l *Lifecycle) Close(ctx context.Context) error {
	if !l.Handle.MarkClosed(ctx) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.release != nil {
		l.release()
	}
	return nil
}
