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
func (a *App) buildDedupe() (Component, error) {
	var (
		s     dedupe.Store
		start func(context.Context) error
	)
	switch d := a.cfg.Dedupe; d.Backend {
	case "local":
		ls, err := localdedupe.New(localdedupe.Config{Dir: d.Local.Dir}, localdedupe.Deps{Logger: a.log})
		if err != nil {
			return nil, err
		}
		s = ls
	case "dynamodb":
		dd := d.DynamoDB
		ds, err := dynamodedupe.New(dynamodedupe.Config{
			Table: dd.Table, Region: dd.Region, Endpoint: dd.Endpoint, CreateTable: dd.CreateTable,
			AccessKeyIDFile: dd.AccessKeyIDFile, SecretAccessKeyFile: dd.SecretAccessKeyFile,
		}, dynamodedupe.Deps{Logger: a.log, Breakers: a.breakers})
		if err != nil {
			return nil, err
		}
		s, start = ds, ds.EnsureTable
	default:
		return nil, fmt.Errorf("dedupe.backend %q is not built in", d.Backend)
	}
	m, err := dedupemetrics.New(a.reg)
	if err != nil {
		return nil, err
	}
	a.dedupe = m.Wrap(s)
	return newComponent(compDedupe, start, nil, s.Close), nil
}
