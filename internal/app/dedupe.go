package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/dedupe/dedupemetrics"
	"github.com/wavehouse/wavehouse/internal/dedupe/dynamodedupe"
	"github.com/wavehouse/wavehouse/internal/dedupe/localdedupe"
)

// buildDedupe opens the selected idempotency-key store and wraps it with metrics.
func buildDedupe(e env) (dedupe.Store, Component, error) {
	var (
		s     dedupe.Store
		start func(context.Context) error
		run   func(context.Context) error
	)
	switch d := e.cfg.Dedupe; d.Backend {
	case "local":
		ls, err := localdedupe.New(localdedupe.Config{Dir: d.Local.Dir}, localdedupe.Deps{Logger: e.log})
		if err != nil {
			return nil, nil, err
		}
		s = ls
	case "dynamodb":
		dd := d.DynamoDB
		ds, err := dynamodedupe.New(dynamodedupe.Config{
			Table: dd.Table, Region: dd.Region, Endpoint: dd.Endpoint, CreateTable: dd.CreateTable,
			AccessKeyIDFile: dd.AccessKeyIDFile, SecretAccessKeyFile: dd.SecretAccessKeyFile,
		}, dynamodedupe.Deps{Logger: e.log, Breakers: e.breakers})
		if err != nil {
			return nil, nil, err
		}
		s = ds
		h := &backendHealth{
			comp: compDedupe,
			transient: func(err error) bool {
				return dedupe.IsUnavailable(err) && !errors.Is(err, dynamodedupe.ErrTableMissing)
			},
			cause:     dedupe.ErrUnavailable,
			bootWarn:  "dedupe store unreachable at boot: requests with an Idempotency-Key answer 503 dedupe.unavailable until it returns; other ingest and queries are served",
			downWarn:  "dedupe store still unreachable",
			prepare:   ds.EnsureTable,
			readiness: e.readiness,
			log:       e.log.With("component", compDedupe),
		}
		start, run = h.start, h.run
	default:
		return nil, nil, fmt.Errorf("dedupe.backend %q is not built in", d.Backend)
	}
	m, err := dedupemetrics.New(e.reg)
	if err != nil {
		return nil, nil, err
	}
	return m.Wrap(s), newComponent(compDedupe, start, run, s.Close), nil
}
