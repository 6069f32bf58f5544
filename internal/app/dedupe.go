package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/dedupe/dedupemetrics"
	"github.com/wavehouse/wavehouse/internal/dedupe/dynamodedupe"
	"github.com/wavehouse/wavehouse/internal/dedupe/localdedupe"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
)

// frameResolver is the embedded queue's ResolveFrames.
type frameResolver interface {
	ResolveFrames(ctx context.Context, marks []jsmq.MarkedFrame) ([]string, error)
}

// resolvesCommits says whether the local store's commits are resolved from the queue: the
// embedded queue, one process publishing every frame the store marks, fsyncing each before its
// publish returns (with sync interval or none a power loss could take a frame already inserted
// with its unsynced commit, and the stream could no longer tell).
func resolvesCommits(e env) bool {
	return e.cfg.MQ.Backend == "embedded" && e.cfg.MQ.Embedded.Sync == embeddedmq.SyncAlways
}

// resolvesAtBoot says whether the local store resolves marks from the queue at boot: with the
// embedded queue, whatever its sync now (an earlier run with sync always may have left some).
func resolvesAtBoot(e env) bool {
	return e.cfg.Dedupe.Backend == "local" && e.cfg.MQ.Backend == "embedded"
}

// resolveMargin is how long after its mark's FrameUntil a keyed request can still commit: the
// store's default plus how long ?wait=committed may hold the commit back. The local store
// resolves marks that recent, and the sweeper keeps frames that much past the duplicate window.
func resolveMargin(e env) time.Duration {
	return localdedupe.DefaultResolveMargin + e.cfg.Ingest.WaitTimeout.D()
}

// buildDedupe opens the selected idempotency-key store and wraps it with metrics. With the local
// store and the embedded queue (one process publishes every frame the store marks), commits are
// resolved from the queue (docs/adr/0017): the component's start resolves the marks a crash left
// before anything serves, and retention gives a resolved claim's retention by tenant.
func buildDedupe(e env, queue mq.Queue, retention func(tenant string) time.Duration) (dedupe.Store, Component, error) {
	var (
		s     dedupe.Store
		start func(context.Context) error
		run   func(context.Context) error
	)
	switch d := e.cfg.Dedupe; d.Backend {
	case "local":
		fr, ok := queue.(frameResolver) // natsmq has it too: only the embedded queue's is exact
		embedded := ok && resolvesAtBoot(e)
		resolving := embedded && resolvesCommits(e)
		ls, err := localdedupe.New(localdedupe.Config{Dir: d.Local.Dir, ResolveFromQueue: resolving, ResolveMargin: resolveMargin(e)},
			localdedupe.Deps{Logger: e.log})
		if err != nil {
			return nil, nil, err
		}
		s = ls
		if embedded {
			// Also when commits are fsynced now: a run before, with sync always, may have left
			// lost commits to resolve from the same stream.
			start = func(ctx context.Context) error {
				_, err := ls.ResolveMarks(ctx, func(ctx context.Context, claims []localdedupe.Unresolved) ([]string, error) {
					marks := make([]jsmq.MarkedFrame, len(claims))
					for i, c := range claims {
						marks[i] = jsmq.MarkedFrame{Tenant: c.Tenant, Table: c.Table, Frame: c.Frame, QueueKey: c.QueueKey}
					}
					return fr.ResolveFrames(ctx, marks)
				}, retention)
				return err
			}
		}
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
