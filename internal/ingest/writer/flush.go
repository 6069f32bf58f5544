package writer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/store"
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
				failed[recKey{fi, ri}] = fmt.Errorf("%w: tenant %q: %v", store.ErrRejected, k.tenant, err)
			}
		}
		w.settle(ctx, k, frames, failed, log)
		return
	}
	br := w.breakerFor(k.tenant)
	if ok, wait := br.allow(w.deps.Now()); !ok {
		m.retries.WithLabelValues("breaker_open").Inc()
		w.nakAll(ctx, frames, wait, log)
		return
	}

	groups, order := w.decode(frames, failed)
	rows := 0
	for _, key := range order {
		for _, u := range groups[key] {
			rows += len(u.seg.Rows)
		}
	}
	m.batchRows.Observe(float64(rows))
	start := time.Now()
	for _, key := range order {
		if err := w.insertIsolating(ctx, target, k.table, groups[key], failed); err != nil {
			m.insertDuration.WithLabelValues(store.Classify(err).String()).Observe(time.Since(start).Seconds())
			if ctx.Err() != nil {
				w.nakAll(ctx, frames, 0, log) // shutting down: hand the frames to another writer now
				return
			}
			open := br.failure(w.deps.Now())
			m.retries.WithLabelValues("transient").Inc()
			delay := backoff(w.cfg.BackoffMin, w.cfg.BackoffMax, maxAttempts(frames))
			log.Warn("insert failed transiently; frames will be redelivered", "error", err,
				"frames", len(frames), "rows", rows, "retry_in", delay.String(), "breaker_open", open, "trace_ids", traceIDs(frames))
			w.nakAll(ctx, frames, delay, log)
			return
		}
	}
	br.success()
	m.insertDuration.WithLabelValues("ok").Observe(time.Since(start).Seconds())
	w.settle(ctx, k, frames, failed, log)
	log.Debug("batch inserted", "frames", len(frames), "rows", rows, "failed_records", len(failed),
		"duration_ms", time.Since(start).Milliseconds(), "trace_ids", traceIDs(frames))
}

// decode splits the frames' records into units grouped by column list (in first-seen order).
// A record whose payload does not decode is marked failed: it can never be inserted.
func (w *Writer) decode(frames []mq.Delivery, failed map[recKey]error) (map[string][]unit, []string) {
	groups := map[string][]unit{}
	var order []string
	for fi, d := range frames {
		for ri, r := range d.Records() {
			segs, err := payload.Decode(r.Payload)
			if err != nil {
				failed[recKey{fi, ri}] = fmt.Errorf("%w: %v", store.ErrRejected, err)
				continue
			}
			for _, s := range segs {
				key := s.Key()
				if _, ok := groups[key]; !ok {
					order = append(order, key)
				}
				groups[key] = append(groups[key], unit{rec: recKey{fi, ri}, seg: s})
			}
		}
	}
	return groups, order
}

// insertIsolating inserts units (one column list). On a permanent failure it finds the failing
// records — directly when the error names a row, else by bisection — marks them in failed, and
// inserts the rest. It returns a transient (or cancellation) error, after which nothing of the
// batch may be acknowledged.
func (w *Writer) insertIsolating(ctx context.Context, target store.Target, table string, units []unit, failed map[recKey]error) error {
	units = skipFailed(units, failed)
	for len(units) > 0 {
		err := w.insert(ctx, target, table, units)
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
		if err := w.insertIsolating(ctx, target, table, units[:mid], failed); err != nil {
			return err
		}
		units = skipFailed(units[mid:], failed)
	}
	return nil
}

// wholeBatch reports errors that no subset of the rows could avoid.
func wholeBatch(err error) bool {
	return errors.Is(err, store.ErrUnknownTable) || errors.Is(err, store.ErrUnknownDatabase) ||
		errors.Is(err, store.ErrUnknownColumn) || errors.Is(err, store.ErrReadOnly)
}

func (w *Writer) insert(ctx context.Context, target store.Target, table string, units []unit) error {
	n := 0
	for _, u := range units {
		n += len(u.seg.Rows)
	}
	b := store.Batch{Target: target, Table: table, Columns: units[0].seg.Columns, Rows: make([][]byte, 0, n)}
	for _, u := range units {
		b.Rows = append(b.Rows, u.seg.Rows...)
	}
	ictx, cancel := context.WithTimeout(ctx, w.cfg.InsertTimeout)
	defer cancel()
	return w.deps.Store.Insert(ictx, b)
}

func unitOfRow(units []unit, row int) (unit, bool) {
	for _, u := range units {
		if row < len(u.seg.Rows) {
			return u, row >= 0
		}
		row -= len(u.seg.Rows)
	}
	return unit{}, false
}

func skipFailed(units []unit, failed map[recKey]error) []unit {
	out := units[:0:0]
	for _, u := range units {
		if _, bad := failed[u.rec]; !bad {
			out = append(out, u)
		}
	}
	return out
}

// settle acknowledges frames whose records are all inserted and dead-letters the failed records
// of the others (which acknowledges those frames too).
func (w *Writer) settle(ctx context.Context, k tableKey, frames []mq.Delivery, failed map[recKey]error, log interface {
	Error(string, ...any)
}) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	m := w.deps.Metrics
	inserted := 0
	for fi, d := range frames {
		recs := d.Records()
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
			if err := d.Ack(sctx); err != nil {
				m.settleFailures.WithLabelValues("ack").Inc()
				log.Error("ack after insert failed; the frame will be redelivered and inserted again", "error", err, "seq", d.Meta().Seq)
				continue
			}
		} else {
			dl, ok := d.(mq.DeadLetterer)
			if !ok {
				log.Error("delivery cannot dead-letter; redelivering", "seq", d.Meta().Seq)
				_ = d.Nak(sctx, w.cfg.BackoffMax)
				continue
			}
			reason := mq.Reason{Code: errorCode(first), Message: strings.Join(reasons, "; "), Attempts: d.Meta().Attempts, LastFailure: w.deps.Now()}
			if err := dl.DeadLetter(sctx, reason, dead...); err != nil {
				m.settleFailures.WithLabelValues("dead_letter").Inc()
				log.Error("dead-lettering failed; the frame will be redelivered", "error", err, "seq", d.Meta().Seq)
				_ = d.Nak(sctx, w.cfg.BackoffMin)
				continue
			}
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
		if w.deps.Hooks.Inserted != nil {
			w.deps.Hooks.Inserted(sctx, k.tenant, k.table)
		}
	}
}

func (w *Writer) nakAll(ctx context.Context, frames []mq.Delivery, delay time.Duration, log interface {
	Warn(string, ...any)
}) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	for _, d := range frames {
		if err := d.Nak(sctx, delay); err != nil {
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
	switch {
	case err == nil:
		return "unknown"
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
