package app

import (
	"github.com/wavehouse/wavehouse/internal/ingest/commits"
	"github.com/wavehouse/wavehouse/internal/ingest/writer"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/schemacache"
)

// ingestDeps is what the ingest role's writer works over.
type ingestDeps struct {
	queue   mq.Queue
	store   store.Store
	schema  *schemacache.Cache
	targets tenantTargets
	inv     cacheInvalidator
	commits *commits.Log
	// fault is the writer's fault-injection hook (WithWriterFault); nil in production.
	fault func(writer.FaultPoint)
}

// buildIngest creates the ingest role's writer over the queue and the store.
func buildIngest(e env, d ingestDeps) (Component, error) {
	f := e.cfg.Ingest.Flush
	cfg := writer.DefaultConfig()
	cfg.MaxRows, cfg.MaxBytes, cfg.MaxWait = f.MaxRows, f.MaxBytes, f.MaxWait.D()
	// Held frames are reported in progress three times per ack wait, so a frame waiting behind
	// a slow insert or a draining backlog is never handed out again.
	cfg.ProgressInterval = e.cfg.MQ.AckWait.D() / 3
	m, err := writer.NewMetrics(e.reg)
	if err != nil {
		return nil, err
	}
	w, err := writer.New(cfg, writer.Deps{
		Consumer: d.queue,
		Store:    d.store,
		Targets:  d.targets,
		Schema:   d.schema,
		Metrics:  m,
		Breakers: e.breakers,
		Fault:    d.fault,
		Tracer:   e.tracer.Scoped(),
		Log:      e.log.With("component", compIngest),
		Hooks: writer.Hooks{
			Inserted: d.inv.BumpTable,
			Settled: func(tenant, table string, pos mq.Position, dead bool) {
				o := commits.Inserted
				if dead {
					o = commits.DeadLettered
				}
				d.commits.Settled(tenant, table, pos, o)
			},
		},
	})
	if err != nil {
		return nil, err
	}
	return newComponent(compIngest, nil, w.Run, nil), nil
}
