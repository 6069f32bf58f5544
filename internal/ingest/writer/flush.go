package writer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/wavehouse/wavehouse/internal/breaker"
	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/tracing"
)

// settleTimeout bounds acks, naks and dead-lettering, which must run even while the writer is
// shutting down: rows already inserted should be acknowledged rather than inserted twice.
const settleTimeout = 10 * time.Second

// recKey addresses one record of a batch: frame index, record index within the frame.
type recKey struct{ frame, rec int }

// unit is one segment of one record, the granularity at which a failing insert is bisected.
type unit struct {
	rec recKey
	seg payload.Segment
	// traceparent is the record's trace context (its request span), for the insert span's links.
	traceparent string
}

// targetInfo is the store target of a flush and whether inserts into the table are
// deduplicated by token (for logs and metrics of in-doubt batches).
type targetInfo struct {
	target store.Target
	dedup  bool
}

// flush inserts one batch of a table's frames and settles every frame exactly once.
func (w *Writer) flush(ctx context.Context, k tableKey, frames []mq.Delivery) {
	m := w.deps.Metrics
	log := w.deps.Log.With("tenant", k.tenant, "table", k.table)
	failed := map[recKey]error{}
	target, err := w.deps.Targets.Target(k.tenant)
	if err != nil {
		for fi, d := range frames {
			for ri := range d.Records() {
				failed[recKey{fi, ri}] = codedError{"unknown_tenant", fmt.Sprintf("tenant %q has no store target: %v", k.tenant, err)}
			}
		}
		w.settle(ctx, k, frames, failed, log)
		return
	}
	br := w.breakerFor(k.tenant)
	if ok, wait := br.Ready(); !ok {
		// Skip the journal work of a batch the breaker would refuse anyway; admission itself
		// happens around the plan and the insert below.
		m.retries.WithLabelValues("breaker_open").Inc()
		w.nakAll(ctx, frames, wait, log)
		return
	}
	tgt := targetInfo{target: target, dedup: w.dedup.check(ctx, k, target, log)}
	var plan mq.BatchPlan
	if w.journal != nil {
		if frames = w.resolveRedelivered(ctx, k, tgt, frames, log); len(frames) == 0 {
			return
		}
		refs := make([]mq.FrameRef, len(frames))
		for i, d := range frames {
			refs[i] = refOf(d)
		}
		plan = mq.BatchPlan{ID: mq.PlanID(refs), Tenant: k.tenant, Table: k.table, Frames: refs}
	}

	recs := make([][]mq.Record, len(frames))
	for i, d := range frames {
		recs[i] = d.Records()
	}
	start := time.Now()
	// The plan is recorded inside the breaker's call so that a refused batch leaves no plan
	// behind; a plan that cannot be recorded reports neutral (the store was not tried).
	err = br.Do(func() (breaker.Outcome, error) {
		if w.journal != nil {
			if err := w.journal.Plan(ctx, plan); err != nil {
				return breaker.Neutral, planError{err}
			}
		}
		err := w.insertBatch(ctx, k, tgt, recs, plan.ID, failed)
		return insertOutcome(ctx, err), err
	})
	var (
		refused *breaker.OpenError
		perr    planError
	)
	switch {
	case err == nil:
	case errors.As(err, &refused):
		// Another flush of this target holds the half-open trial.
		m.retries.WithLabelValues("breaker_open").Inc()
		w.nakAll(ctx, frames, refused.RetryIn, log)
		return
	case errors.As(err, &perr):
		m.retries.WithLabelValues("journal").Inc()
		delay := backoff(w.cfg.BackoffMin, w.cfg.BackoffMax, maxAttempts(frames))
		log.Warn("recording the batch plan failed; frames will be redelivered", "error", perr.err, "frames", len(frames), "retry_in", delay.String())
		w.nakAll(ctx, frames, delay, log)
		return
	case ctx.Err() != nil:
		w.nakAll(ctx, frames, 0, log) // shutting down: hand the frames to another writer now
		return
	default:
		m.retries.WithLabelValues("transient").Inc()
		delay := backoff(w.cfg.BackoffMin, w.cfg.BackoffMax, maxAttempts(frames))
		log.Warn("insert failed transiently; frames will be redelivered", "error", err,
			"frames", len(frames), "retry_in", delay.String(), "breaker", br.State().String(), "trace_ids", traceIDs(frames))
		w.nakAll(ctx, frames, delay, log)
		return
	}
	w.fault(FaultInserted)
	if w.journal != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		err := w.journal.MarkInserted(sctx, plan, failedRecords(failed))
		cancel()
		if err != nil {
			// The acks that follow most likely fail too; if they do not, the batch is done.
			m.settleFailures.WithLabelValues("journal").Inc()
			log.Error("marking the batch inserted failed; a redelivered frame completes it with the same tokens", "error", err)
		}
		w.fault(FaultMarked)
	}
	if w.settle(ctx, k, frames, failed, log) {
		w.forgetLater(plan)
	}
	log.Debug("batch inserted", "frames", len(frames), "failed_records", len(failed),
		"duration_ms", time.Since(start).Milliseconds(), "trace_ids", traceIDs(frames))
}

// planError is a failure to record a batch plan, told apart from an insert failure.
type planError struct{ err error }

func (e planError) Error() string { return "recording the batch plan: " + e.err.Error() }
func (e planError) Unwrap() error { return e.err }

// insertOutcome is what an insertBatch error says about the store target: nil (including
// batches whose records all failed permanently) means the server answered; cancellation (the
// writer shutting down, the store closed) says nothing.
func insertOutcome(ctx context.Context, err error) breaker.Outcome {
	switch {
	case err == nil:
		return breaker.Success
	case ctx.Err() != nil || store.Classify(err) == store.ClassCanceled:
		return breaker.Neutral
	}
	return breaker.Failure
}

// insertBatch inserts the records of frames (a plan's frames in plan order) grouped by column
// list, each statement with the deduplication token of its place in the batch when planID is
// set. Permanently failing records are marked in failed; a transient (or cancellation) error
// is returned, after which nothing of the batch may be acknowledged.
func (w *Writer) insertBatch(ctx context.Context, k tableKey, tgt targetInfo, frames [][]mq.Record, planID string, failed map[recKey]error) error {
	m := w.deps.Metrics
	groups, order := w.decode(frames, failed)
	rows := 0
	for _, key := range order {
		for _, u := range groups[key] {
			rows += u.seg.Len()
		}
	}
	m.batchRows.Observe(float64(rows))
	start := time.Now()
	for g, key := range order {
		if err := w.insertIsolating(ctx, tgt.target, k.table, groups[key], failed, tokenPrefix(planID, g)); err != nil {
			m.insertDuration.WithLabelValues(store.Classify(err).String()).Observe(time.Since(start).Seconds())
			return err
		}
	}
	m.insertDuration.WithLabelValues("ok").Observe(time.Since(start).Seconds())
	return nil
}

// decode splits the frames' records into units grouped by column list (in first-seen order).
// A record whose payload does not decode is marked failed: it can never be inserted.
func (w *Writer) decode(frames [][]mq.Record, failed map[recKey]error) (map[string][]unit, []string) {
	groups := map[string][]unit{}
	var order []string
	// Most batches have one column list: its units get room for every record at once.
	n := 0
	for _, recs := range frames {
		n += len(recs)
	}
	var dec payload.Decoder
	for fi, recs := range frames {
		for ri, r := range recs {
			segs, err := dec.Decode(r.Payload)
			if err != nil {
				failed[recKey{fi, ri}] = fmt.Errorf("%w: %w", store.ErrRejected, err)
				continue
			}
			for _, s := range segs {
				key := dec.Key(s)
				if _, ok := groups[key]; !ok {
					if len(order) == 0 {
						groups[key] = make([]unit, 0, n)
					}
					order = append(order, key)
				}
				groups[key] = append(groups[key], unit{rec: recKey{fi, ri}, seg: s, traceparent: r.Headers[mq.HeaderTraceparent]})
			}
		}
	}
	return groups, order
}

// insertIsolating inserts units (one column list). On a permanent failure it finds the failing
// records — directly when the error names a row, else by bisection — marks them in failed, and
// inserts the rest. It returns a transient (or cancellation) error, after which nothing of the
// batch may be acknowledged.
//
// token, when set, roots the deduplication tokens of its statements: every statement gets
// token + its attempt number, and the halves of a bisection extend token with "l" and "r", so
// the same batch failing the same way sends the same tokens again.
func (w *Writer) insertIsolating(ctx context.Context, target store.Target, table string, units []unit, failed map[recKey]error, token string) error {
	units = skipFailed(units, failed)
	for try := 0; len(units) > 0; try++ {
		err := w.insert(ctx, target, table, units, subToken(token, "."+strconv.Itoa(try)))
		switch store.Classify(err) {
		case store.ClassNone:
			return nil
		case store.ClassTransient, store.ClassCanceled:
			return err
		}
		if store.SchemaChanged(err) && w.deps.Schema != nil {
			w.deps.Schema.Invalidate(target, table)
		}
		if wholeBatch(err) || len(units) == 1 {
			for _, u := range units {
				failed[u.rec] = err
			}
			return nil
		}
		var re *store.RowError
		if errors.As(err, &re) {
			if u, ok := unitOfRow(units, re.Row); ok {
				failed[u.rec] = err
				units = skipFailed(units, failed)
				continue
			}
		}
		mid := len(units) / 2
		if err := w.insertIsolating(ctx, target, table, units[:mid], failed, subToken(token, "l")); err != nil {
			return err
		}
		units = skipFailed(units[mid:], failed)
		token = subToken(token, "r")
	}
	return nil
}

func subToken(token, suffix string) string {
	if token == "" {
		return ""
	}
	return token + suffix
}

// wholeBatch reports errors that no subset of the rows could avoid.
func wholeBatch(err error) bool {
	return errors.Is(err, store.ErrUnknownTable) || errors.Is(err, store.ErrUnknownDatabase) ||
		errors.Is(err, store.ErrUnknownColumn) || errors.Is(err, store.ErrReadOnly)
}

func (w *Writer) insert(ctx context.Context, target store.Target, table string, units []unit, token string) error {
	b := batchOf(target, table, units, token)
	ictx, cancel := context.WithTimeout(ctx, w.cfg.InsertTimeout)
	defer cancel()
	ictx, span := tracing.Start(ictx, w.deps.Tracer, "insert", trace.SpanKindClient)
	defer span.End()
	if span.IsRecording() {
		traceInsert(span, table, units, b.Len())
	}
	err := w.deps.Store.Insert(ictx, b)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// batchOf is the insert of units, which share one segment key (encoding, columns, types): the
// RowBinary rows of the units concatenated in order — sent as they are, never decoded — or the
// canonical rows of version 1 segments. The bytes are a pure function of the units, so a batch
// rebuilt after a redelivery is byte-identical.
func batchOf(target store.Target, table string, units []unit, token string) store.Batch {
	first := units[0].seg
	b := store.Batch{Target: target, Table: table, Columns: first.Columns, DedupToken: token}
	if first.Binary() {
		size := 0
		for _, u := range units {
			size += len(u.seg.Data)
			b.Count += u.seg.Count
		}
		b.Types = first.Types
		b.RowBinary = make([]byte, 0, size)
		for _, u := range units {
			b.RowBinary = append(b.RowBinary, u.seg.Data...)
		}
		return b
	}
	n := 0
	for _, u := range units {
		n += len(u.seg.Rows)
	}
	b.Rows = make([][]byte, 0, n)
	for _, u := range units {
		b.Rows = append(b.Rows, u.seg.Rows...)
	}
	return b
}

func unitOfRow(units []unit, row int) (unit, bool) {
	for _, u := range units {
		if row < u.seg.Len() {
			return u, row >= 0
		}
		row -= u.seg.Len()
	}
	return unit{}, false
}

// skipFailed returns the units whose record has not failed: units itself when none has (the
// common case, a batch of single-row requests being tens of thousands of units), else a new
// slice, so the caller's units are never written.
func skipFailed(units []unit, failed map[recKey]error) []unit {
	if len(failed) == 0 {
		return units
	}
	out := make([]unit, 0, len(units))
	for _, u := range units {
		if _, bad := failed[u.rec]; !bad {
			out = append(out, u)
		}
	}
	return out
}

// settle acknowledges frames whose records are all inserted and dead-letters the failed records
// of the others (which acknowledges those frames too).
//
// It reports whether every frame was settled.
func (w *Writer) settle(ctx context.Context, k tableKey, frames []mq.Delivery, failed map[recKey]error, log interface {
	Error(string, ...any)
}) bool {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	m := w.deps.Metrics
	inserted := 0
	all := true
	w.bumpBeforeAck(sctx, k, frames, failed)
	for fi, d := range frames {
		recs := d.Records()
		release := func() { w.held.release(d) }
		var dead []int
		var reasons []string
		var first error
		for ri := range recs {
			if err, bad := failed[recKey{fi, ri}]; bad {
				dead = append(dead, ri)
				reasons = append(reasons, fmt.Sprintf("record %d: %v", ri, err))
				if first == nil {
					first = err
				}
			}
		}
		if len(dead) == 0 {
			err := d.Ack(sctx)
			release()
			if err != nil {
				m.settleFailures.WithLabelValues("ack").Inc()
				log.Error("ack after insert failed; the frame will be redelivered", "error", err, "seq", d.Meta().Seq)
				all = false
				continue
			}
		} else {
			dl, ok := d.(mq.DeadLetterer)
			if !ok {
				log.Error("delivery cannot dead-letter; redelivering", "seq", d.Meta().Seq)
				_ = d.Nak(sctx, w.cfg.BackoffMax)
				release()
				all = false
				continue
			}
			reason := mq.Reason{Code: errorCode(first), Message: strings.Join(reasons, "; "), Attempts: d.Meta().Attempts, LastFailure: w.deps.Now()}
			if err := dl.DeadLetter(sctx, reason, dead...); err != nil {
				m.settleFailures.WithLabelValues("dead_letter").Inc()
				log.Error("dead-lettering failed; the frame will be redelivered", "error", err, "seq", d.Meta().Seq)
				_ = d.Nak(sctx, w.cfg.BackoffMin)
				release()
				all = false
				continue
			}
			release()
			m.deadLettered.WithLabelValues(k.tenant, k.table, reason.Code).Add(float64(len(dead)))
			log.Error("records dead-lettered", "records", len(dead), "code", reason.Code, "reason", reason.Message, "seq", d.Meta().Seq)
		}
		for ri, r := range recs {
			_, bad := failed[recKey{fi, ri}]
			if !bad {
				inserted += payload.Rows(r.Payload)
			}
			if w.deps.Hooks.Settled != nil {
				w.deps.Hooks.Settled(k.tenant, k.table, r.Position, bad)
			}
		}
	}
	if inserted > 0 {
		m.rowsInserted.WithLabelValues(k.tenant, k.table).Add(float64(inserted))
	}
	return all
}

// bumpBeforeAck runs the Inserted hook (the table's cache version bump) when any record of
// frames was inserted, before any of them is acknowledged: a crash after the acks must not leave
// cached results of the table stale, because nothing would redeliver the frames to bump it later.
// A crash before the acks redelivers the frames, and settling them again bumps again.
func (w *Writer) bumpBeforeAck(ctx context.Context, k tableKey, frames []mq.Delivery, failed map[recKey]error) {
	if w.deps.Hooks.Inserted == nil {
		return
	}
	for fi, d := range frames {
		for ri := range d.Records() {
			if _, bad := failed[recKey{fi, ri}]; !bad {
				w.deps.Hooks.Inserted(ctx, k.tenant, k.table)
				return
			}
		}
	}
}

func (w *Writer) nakAll(ctx context.Context, frames []mq.Delivery, delay time.Duration, log interface {
	Warn(string, ...any)
}) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	for _, d := range frames {
		err := d.Nak(sctx, delay)
		w.held.release(d)
		if err != nil {
			w.deps.Metrics.settleFailures.WithLabelValues("nak").Inc()
			log.Warn("nak failed; the frame is redelivered after the ack wait", "error", err, "seq", d.Meta().Seq)
		}
	}
}

func maxAttempts(frames []mq.Delivery) int {
	n := 1
	for _, d := range frames {
		n = max(n, d.Meta().Attempts)
	}
	return n
}

// errorCode is the stable DLQ reason code of a permanent insert failure.
func errorCode(err error) string {
	var ce codedError
	switch {
	case err == nil:
		return "unknown"
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, store.ErrUnknownTable):
		return "unknown_table"
	case errors.Is(err, store.ErrUnknownDatabase):
		return "unknown_database"
	case errors.Is(err, store.ErrUnknownColumn):
		return "unknown_column"
	case errors.Is(err, store.ErrReadOnly):
		return "read_only"
	case errors.Is(err, store.ErrLimitExceeded):
		return "limit_exceeded"
	case errors.Is(err, payload.ErrMalformed):
		return "malformed_payload"
	}
	return "rejected"
}

func traceIDs(frames []mq.Delivery) []string {
	var ids []string
	for _, d := range frames {
		for _, r := range d.Records() {
			if tp := r.Headers[mq.HeaderTraceparent]; len(tp) >= 35 {
				ids = append(ids, tp[3:35])
			}
		}
	}
	return ids
}
