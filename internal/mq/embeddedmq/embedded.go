// Package embeddedmq is the embedded queue backend: a NATS server with
// JetStream inside the process, listening on no port, reached through an
// in-process connection by the same JetStream code (jsmq) as the external
// backend. WaveHouse creates and reconciles its topology itself.
package embeddedmq

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
)

// Queue is the embedded mq.Queue. Calls before Start fail with
// mq.ErrUnavailable; calls after Close fail with mq.ErrClosed. Start starts the in-process
// server, connects and reconciles the topology; Close ends subscriptions, closes the connection
// and shuts the server down (flushing the store).
type Queue struct {
	*jsmq.Lifecycle
	cfg  Config
	deps Deps
}

var _ mq.Queue = (*Queue)(nil)

// New validates cfg and returns an unstarted queue; it starts nothing.
func New(cfg Config, deps Deps) (*Queue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q := &Queue{cfg: cfg.withDefaults(), deps: deps}
	q.Lifecycle = jsmq.NewLifecycle(deps.Registerer, q.open)
	return q, nil
}

// open starts the in-process server, connects and reconciles the topology (jsmq.OpenFunc).
func (q *Queue) open(ctx context.Context, metrics *jsmq.Metrics) (*jsmq.Queue, func(), error) {
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
		return nil, nil, fmt.Errorf("embedded nats server: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return nil, nil, fmt.Errorf("%w: embedded nats server not ready after 30s", mq.ErrUnavailable)
	}
	nc, err := nats.Connect(ns.ClientURL(), nats.InProcessServer(ns), nats.Name("wavehouse-embedded"),
		nats.MaxReconnects(-1), nats.ReconnectBufSize(-1))
	if err != nil {
		ns.Shutdown()
		return nil, nil, fmt.Errorf("%w: connect to embedded server: %w", mq.ErrUnavailable, err)
	}
	release := func() {
		nc.Close()
		ns.Shutdown()
		ns.WaitForShutdown()
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
	return jq, release, err
}
