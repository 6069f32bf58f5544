package app

import (
	"context"
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
		s, start = ds, ds.EnsureTable
	default:
		return nil, nil, fmt.Errorf("dedupe.backend %q is not built in", d.Backend)
	}
	m, err := dedupemetrics.New(e.reg)
	if err != nil {
		return nil, nil, err
	}
	return m.Wrap(s), newComponent(compDedupe, start, nil, s.Close), nil
}
