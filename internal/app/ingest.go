package app

import (
	"github.com/wavehouse/wavehouse/internal/ingest/commits"
	"github.com/wavehouse/wavehouse/internal/ingest/writer"
	"github.com/wavehouse/wavehouse/internal/mq"
)

// buildIngest creates the ingest role's writer over the queue and the store.
func (a *App) buildIngest() (Component, error) {
	f := a.cfg.Ingest.Flush
	cfg := writer.DefaultConfig()
	cfg.MaxRows, cfg.MaxBytes, cfg.MaxWait = f.MaxRows, f.MaxBytes, f.MaxWait.D()
	// Held frames are reported in progress three times per ack wait, so a frame waiting behind
	// a slow insert or a draining backlog is never handed out again.
	cfg.ProgressInterval = a.cfg.MQ.AckWait.D() / 3
	m, err := writer.NewMetrics(a.reg)
	if err != nil {
		return nil, err
	}
	inv := cacheInvalidator{a}
	w, err := writer.New(cfg, writer.Deps{
		Consumer: a.queue,
		Store:    a.store,
		Targets:  tenantTargets{a},
		Schema:   a.schema,
		Metrics:  m,
		Breakers: a.breakers,
		Fault:    a.opts.writerFault,
		Log:      a.log.With("component", compIngest),
		Hooks: writer.Hooks{
			Inserted: inv.BumpTable,
			Settled: func(tenant, table string, pos mq.Position, dead bool) {
				o := commits.Inserted
				if dead {
					o = commits.DeadLettered
				}
				a.commits.Settled(tenant, table, pos, o)
			},
		},
	})
	if err != nil {
		return nil, err
	}
	return newComponent(compIngest, nil, w.Run, nil), nil
}
