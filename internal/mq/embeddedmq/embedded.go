// Package embeddedmq is the embedded queue backend: a NATS server with
// JetStream inside the process, listening on no port, reached through an
// in-process connection by the same JetStream code (jsmq) as the external
// backend. WaveHouse creates and reconciles its topology itself.
package embeddedmq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
)

// Queue is the embedded mq.Queue. Calls before Start fail with
// mq.ErrUnavailable; calls after Close fail with mq.ErrClosed.
type Queue struct {
	jsmq.Handle
	cfg  Config
	deps Deps

	mu sync.Mutex
	ns *server.Server
	nc *nats.Conn
}

var _ mq.Queue = (*Queue)(nil)

// New validates cfg and returns an unstarted queue; it starts nothing.
func New(cfg Config, deps Deps) (*Queue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Queue{cfg: cfg.withDefaults(), deps: deps}, nil
}

// Start starts the in-process server, connects and reconciles the topology.
// It is idempotent.
func (q *Queue) Start(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, err := q.Handle.Queue(); errors.Is(err, mq.ErrClosed) {
		return err
	}
	if q.ns != nil {
		return nil
	}
	c := q.cfg
	opts := &server.Options{
		ServerName:         "wavehouse-embedded",
		DontListen:         true,
		NoSigs:             true,
		NoLog:              true,
		JetStream:          true,
		StoreDir:           c.Dir,
		MaxPayload:         int32(c.MaxRecordBytes + 4096),
		SyncAlways:         c.Sync == SyncAlways,
		JetStreamMaxMemory: 256 << 20,
	}
	switch c.Sync {
	case SyncInterval:
		opts.SyncInterval = c.SyncInterval
	case SyncNone:
		opts.SyncInterval = NoneFlushInterval
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("embedded nats server: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return fmt.Errorf("%w: embedded nats server not ready after 30s", mq.ErrUnavailable)
	}
	nc, err := nats.Connect(ns.ClientURL(), nats.InProcessServer(ns), nats.Name("wavehouse-embedded"),
		nats.MaxReconnects(-1), nats.ReconnectBufSize(-1))
	if err != nil {
		ns.Shutdown()
		return fmt.Errorf("%w: connect to embedded server: %w", mq.ErrUnavailable, err)
	}
	var metrics *jsmq.Metrics
	if q.deps.Registerer != nil {
		metrics = jsmq.NewMetrics()
	}
	jq, err := jsmq.New(nc, jsmq.Options{
		SoleConsumer:       true,
		Metrics:            metrics,
		Log:                q.deps.Log,
		Topology:           c.topology(),
		MaxFrameRecords:    c.MaxFrameRecords,
		MaxFrameBytes:      c.MaxFrameBytes,
		TenantMaxBytes:     max(c.TenantMaxBytes, 0),
		TenantBudget:       c.TenantBudget,
		AfterReplayPublish: q.deps.AfterReplayPublish,
	})
	if err == nil {
		err = c.topology().Ensure(ctx, jq.JetStream())
	}
	if err == nil {
		err = jq.ReconcileLayout(ctx)
	}
	if err == nil {
		// The tenant budgets are derived from the queue: a restart must not hand a tenant its whole
		// budget again on top of its backlog.
		err = jq.RebuildBudget(ctx)
	}
	if err == nil && metrics != nil {
		err = metrics.Register(q.deps.Registerer, jq)
	}
	if err == nil {
		err = q.Handle.Install(jq)
	}
	if err == nil {
		jq.ReportExtra(ctx)
	}
	if err != nil {
		nc.Close()
		ns.Shutdown()
		ns.WaitForShutdown()
		return err
	}
	q.ns, q.nc = ns, nc
	return nil
}

// Run starts the queue if needed and blocks until ctx ends.
func (q *Queue) Run(ctx context.Context) error {
	if err := q.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// Close ends subscriptions, closes the connection and shuts the server
// down (flushing the store). It is idempotent.
func (q *Queue) Close(ctx context.Context) error {
	if !q.Handle.MarkClosed(ctx) {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.nc != nil {
		q.nc.Close()
	}
	if q.ns != nil {
		q.ns.Shutdown()
		q.ns.WaitForShutdown()
	}
	return nil
}
