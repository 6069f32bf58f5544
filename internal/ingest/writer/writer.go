// Package writer is the ingest role: it pulls frames from every queue partition, groups their
// rows by (tenant, table), and inserts each table's rows in large batches, one insert in flight
// per table. A frame is acknowledged only after its rows are inserted; transient store failures
// are negatively acknowledged with backoff behind a per-target breaker and never dead-lettered;
// permanent ones are isolated by bisection and only the failing records are dead-lettered.
package writer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/wavehouse/wavehouse/internal/breaker"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/store"
)

// Targets resolves a tenant to the store target that holds its tables.
type Targets interface {
	Target(tenant string) (store.Target, error)
}

// SchemaInvalidator is told when an insert error means the table's cached schema is stale.
type SchemaInvalidator interface {
	Invalidate(target store.Target, table string)
}

// Hooks are called after records are settled. They must not block for long.
type Hooks struct {
	// Inserted runs after rows of tenant/table were inserted and before their frames are
	// acknowledged (the cache version bump: see bumpBeforeAck).
	Inserted func(ctx context.Context, tenant, table string)
	// Settled runs for every record once it is inserted or dead-lettered.
	Settled func(tenant, table string, pos mq.Position, deadLettered bool)
}

// Deps are the writer's collaborators.
type Deps struct {
	Consumer mq.Consumer
	Store    store.Inserter
	Targets  Targets
	Schema   SchemaInvalidator
	Hooks    Hooks
	Metrics  *Metrics
	// Journal records batch plans for exactly-once inserts; nil means the Consumer when it
	// implements mq.Journal (both JetStream backends do), else inserts are at least once.
	Journal mq.Journal
	Log     *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Breakers exports the state of each store target's breaker
	// (wavehouse_breaker_state{component="writer",target=<tenant>}); nil exports nothing.
	Breakers *breaker.Metrics
	// Fault, when set, is called at every FaultPoint of every batch, on the flushing goroutine:
	// the fault-injection hook the crash tests use (in the binary, only a build with the
	// wavehouse_faults tag sets it; see docs/architecture.md). nil in production.
	Fault func(FaultPoint)
	// Tracer starts a span per insert statement, linked to the request span of every record
	// whose rows it carries (the traceparent in the record's headers); nil means no spans.
	Tracer trace.Tracer
}

// Writer is the ingest role's worker.
type Writer struct {
	cfg     Config
	deps    Deps
	journal mq.Journal
	dedup   *dedupChecker
	held    *heldFrames
	forgets forgetQueue

	mu       sync.Mutex
	tables   map[tableKey]*tableQueue
	breakers map[string]*breaker.Breaker
	wg       sync.WaitGroup
}

type tableKey struct{ tenant, table string }

// New returns a writer; it starts nothing.
func New(cfg Config, deps Deps) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Consumer == nil || deps.Store == nil || deps.Targets == nil {
		return nil, errors.New("writer: Consumer, Store and Targets are required")
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if cfg.MaxBuffered == 0 {
		cfg.MaxBuffered = max(cfg.MaxBytes/2, 1)
	}
	if deps.Metrics == nil {
		deps.Metrics, _ = NewMetrics(nil)
	}
	w := &Writer{cfg: cfg, deps: deps, journal: deps.Journal, held: newHeldFrames(), tables: map[tableKey]*tableQueue{}, breakers: map[string]*breaker.Breaker{}}
	if w.journal == nil {
		w.journal, _ = deps.Consumer.(mq.Journal)
	}
	rep, _ := deps.Store.(store.DedupReporter)
	w.dedup = &dedupChecker{rep: rep, metrics: deps.Metrics, now: deps.Now, tables: map[tableKey]dedupStatus{}}
	return w, nil
}

// Run consumes every partition until ctx ends. Buffered frames that were not inserted when ctx
// ends are left unacknowledged, so the queue redelivers them. It returns nil on ctx end.
//
// When the consumer is an mq.Drainer, partitions beyond Partitions() that still hold frames
// (left by a larger mq.partitions) are consumed too, each until it holds nothing
// unacknowledged.
func (w *Writer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for p := range w.deps.Consumer.Partitions() {
		wg.Go(func() { w.consume(ctx, p, nil) })
	}
	if dr, ok := w.deps.Consumer.(mq.Drainer); ok {
		extra, err := dr.ExtraPartitions(ctx)
		if err != nil {
			w.deps.Log.Warn("listing partitions beyond mq.partitions failed; frames left there are not drained until a restart", "error", err)
		}
		for p, n := range extra {
			if n == 0 {
				continue
			}
			w.deps.Log.Info("draining a partition beyond mq.partitions", "partition", p, "frames", n)
			wg.Go(func() { w.consume(ctx, p, drained(dr, p)) })
		}
	}
	wg.Go(func() { w.keepAlive(ctx) })
	wg.Go(func() { w.forgetLoop(ctx) })
	wg.Wait()
	w.wg.Wait()
	return nil
}

// errDrained ends the consumption of a partition beyond mq.partitions.
var errDrained = errors.New("writer: partition drained")

// drained reports whether partition p of dr holds no unacknowledged frame any more.
func drained(dr mq.Drainer, p int) func(context.Context) bool {
	return func(ctx context.Context) bool {
		extra, err := dr.ExtraPartitions(ctx)
		return err == nil && extra[p] == 0
	}
}

// consume pulls one partition and hands frames to their table queues; it never waits on an
// insert, so a slow table cannot hold up the others. With done set it stops once a pull came
// back empty and done reports the partition drained.
func (w *Writer) consume(ctx context.Context, p int, done func(context.Context) bool) {
	log := w.deps.Log.With("partition", p)
	attempt := 0
	for ctx.Err() == nil {
		sub, err := w.deps.Consumer.Subscribe(ctx, p)
		if err != nil {
			attempt++
			log.Warn("subscribe failed; retrying", "error", err, "attempt", attempt)
			sleep(ctx, backoff(w.cfg.BackoffMin, w.cfg.BackoffMax, attempt))
			continue
		}
		attempt = 0
		err = w.pull(ctx, p, sub, log, done)
		_ = sub.Close()
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errDrained) {
			log.Info("partition beyond mq.partitions drained")
			return
		}
		attempt++
		log.Warn("pulling failed; resubscribing", "error", err)
		sleep(ctx, backoff(w.cfg.BackoffMin, w.cfg.BackoffMax, attempt))
	}
}

func (w *Writer) pull(ctx context.Context, p int, sub mq.Subscription, log *slog.Logger, done func(context.Context) bool) error {
	failures := 0
	for {
		if !w.held.waitRoom(ctx, p, w.cfg.MaxBuffered) {
			return ctx.Err()
		}
		ds, err := sub.Fetch(ctx, w.cfg.FetchBatch, w.cfg.FetchWait)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, mq.ErrDeliveryEnded) || errors.Is(err, mq.ErrClosed) {
				return err
			}
			failures++
			w.deps.Metrics.fetchErrors.Inc()
			if failures > 5 {
				return err
			}
			log.Warn("fetch failed", "error", err)
			sleep(ctx, backoff(w.cfg.BackoffMin, w.cfg.BackoffMax, failures))
			continue
		}
		failures = 0
		if len(ds) == 0 && done != nil && done(ctx) {
			return errDrained
		}
		for _, d := range ds {
			w.route(ctx, d)
		}
	}
}

// route appends a frame to its table's queue, starting the table's flusher on first use.
func (w *Writer) route(ctx context.Context, d mq.Delivery) {
	recs := d.Records()
	if len(recs) == 0 {
		// An empty frame carries nothing to insert or dead-letter: acknowledged, and counted.
		w.deps.Metrics.emptyFrames.Inc()
		if err := d.Ack(ctx); err != nil {
			w.deps.Metrics.settleFailures.WithLabelValues("ack").Inc()
		}
		w.deps.Log.Warn("empty frame acknowledged", "partition", d.Meta().Partition, "seq", d.Meta().Seq)
		return
	}
	bytes := frameBytes(recs)
	if !w.held.add(d, bytes) {
		// Delivered again while this writer still holds it (its ack wait ran out): the held
		// copy settles the frame; inserting this one too would insert the rows twice.
		w.deps.Metrics.redeliveredHeld.Inc()
		return
	}
	k := tableKey{recs[0].Tenant, recs[0].Table}
	w.mu.Lock()
	q, ok := w.tables[k]
	if !ok {
		q = newTableQueue()
		w.tables[k] = q
		w.wg.Go(func() { w.flushLoop(ctx, k, q) })
	}
	w.mu.Unlock()
	q.push(d, frameRows(recs), bytes, w.deps.Now())
}

// breakerFor returns the breaker of tenant's store target, built on first use.
func (w *Writer) breakerFor(tenant string) *breaker.Breaker {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.breakers[tenant]
	if !ok {
		log := w.deps.Log.With("tenant", tenant)
		// Config.Validate guarantees a valid breaker config, so New cannot fail here.
		b, _ = breaker.New(breaker.Config{Failures: w.cfg.BreakerFailures, Cooldown: w.cfg.BreakerCooldown}, breaker.Deps{
			Now:       w.deps.Now,
			Metrics:   w.deps.Breakers,
			Component: "writer",
			Target:    tenant,
			OnChange: func(from, to breaker.State) {
				log.Warn("store breaker changed state", "from", from.String(), "to", to.String())
			},
		})
		w.breakers[tenant] = b
	}
	return b
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func frameBytes(recs []mq.Record) int {
	n := 0
	for _, r := range recs {
		n += len(r.Payload)
	}
	return n
}

func describe(k tableKey) string { return fmt.Sprintf("%s/%s", k.tenant, k.table) }
