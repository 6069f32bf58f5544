package writer

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/wavehouse/wavehouse/internal/breaker"
	"github.com/wavehouse/wavehouse/internal/mq"
)

// Exactly-once inserts. Before a batch is inserted its plan (the frames' references, in order)
// is recorded in the queue's journal; every insert statement of the batch carries a
// deduplication token derived from the plan id and the statement's place in the batch (column
// group, bisection path); after every statement succeeded the plan is marked inserted, then the
// frames are acknowledged, and the plan is forgotten ForgetDelay later (forget.go). Every frame of
// a batch is looked up before it is planned:
//
//   - no plan: it was never part of an attempted batch; it joins the normal path;
//   - plan marked inserted: the crash came between the mark and the acks; the frame is
//     acknowledged (and its failed records dead-lettered) without inserting;
//   - plan not marked (in doubt): the batch may have landed in part or in full. The plan is
//     claimed, all its frames are read back by reference, the identical batch is rebuilt and
//     inserted with the same tokens — a server that deduplicates drops what already landed —
//     then marked and the held frames acknowledged. Its other frames, when redelivered, find
//     the plan marked.
//
// A server without insert_deduplication_token (ClickHouse before 22.2, such as 18.16) or a
// table without a deduplication window re-inserts an in-doubt batch in full: at least once,
// counted in wavehouse_ingest_in_doubt_batches_total{outcome="reinserted_not_deduplicated"}.

// tokenPrefix returns the deduplication token root of column group g of a plan.
func tokenPrefix(planID string, g int) string {
	if planID == "" {
		return ""
	}
	return "wh:" + planID + ":" + strconv.Itoa(g)
}

func refOf(d mq.Delivery) mq.FrameRef {
	m := d.Meta()
	return mq.FrameRef{Partition: m.Partition, Seq: m.Seq}
}

// codedError is a failure read back from a plan: its dead-letter code and message.
type codedError struct{ code, msg string }

func (e codedError) Error() string { return e.msg }

// failedRecords lists the failed records of a batch for MarkInserted.
func failedRecords(failed map[recKey]error) []mq.FailedRecord {
	out := make([]mq.FailedRecord, 0, len(failed))
	for k, err := range failed {
		out = append(out, mq.FailedRecord{Frame: k.frame, Record: k.rec, Code: errorCode(err), Message: err.Error()})
	}
	return out
}

// failedOf returns the failures a plan recorded for its frame at plan index fi, keyed for the
// held frame at index hi.
func failedOf(p mq.BatchPlan, fi, hi int, into map[recKey]error) {
	for _, f := range p.Failed {
		if f.Frame == fi {
			into[recKey{hi, f.Record}] = codedError{f.Code, f.Message}
		}
	}
}

// claimLease bounds a recovery: after it another writer may claim the plan again.
func (w *Writer) claimLease() time.Duration {
	return max(2*w.cfg.InsertTimeout+settleTimeout, time.Minute)
}

// resolveRedelivered handles the frames of a batch that were delivered before and belong to a
// recorded plan, and returns the frames left for the normal path. It returns nil after handing
// every frame back when the journal cannot be read.
func (w *Writer) resolveRedelivered(ctx context.Context, k tableKey, tgt targetInfo, frames []mq.Delivery, log *slog.Logger) []mq.Delivery {
	var (
		refs  []mq.FrameRef
		since time.Time
	)
	// Every frame is looked up, not only those the queue reports as redelivered: the delivery
	// count is consumer state that a crashed queue server may not have written to disk, so a
	// frame planned and inserted before a crash can come back as a first delivery.
	for _, d := range frames {
		m := d.Meta()
		refs = append(refs, refOf(d))
		if since.IsZero() || m.StoredAt.Before(since) {
			since = m.StoredAt
		}
	}
	plans, err := w.journal.Lookup(ctx, k.tenant, k.table, refs, since)
	if err != nil {
		w.deps.Metrics.retries.WithLabelValues("journal").Inc()
		delay := backoff(w.cfg.BackoffMin, w.cfg.BackoffMax, maxAttempts(frames))
		log.Warn("journal lookup failed; frames will be redelivered", "error", err, "frames", len(frames), "retry_in", delay.String())
		w.nakAll(ctx, frames, delay, log)
		return nil
	}
	if len(plans) == 0 {
		return frames
	}
	rest := frames[:0:0]
	type held struct {
		plan   mq.BatchPlan
		frames []mq.Delivery
	}
	var inDoubt []*held
	byID := map[string]*held{}
	for _, d := range frames {
		p, ok := plans[refOf(d)]
		switch {
		case !ok:
			rest = append(rest, d)
		case p.Inserted:
			w.deps.Metrics.inDoubt.WithLabelValues("already_inserted").Inc()
			w.settleFromPlan(ctx, k, p, []mq.Delivery{d}, log)
		default:
			h := byID[p.ID]
			if h == nil {
				h = &held{plan: p}
				byID[p.ID] = h
				inDoubt = append(inDoubt, h)
			}
			h.frames = append(h.frames, d)
		}
	}
	for _, h := range inDoubt {
		rest = append(rest, w.recoverPlan(ctx, k, tgt, h.plan, h.frames, log)...)
	}
	return rest
}

// settleFromPlan settles frames of a plan marked inserted: acknowledged, with the records the
// plan lists as failed dead-lettered.
func (w *Writer) settleFromPlan(ctx context.Context, k tableKey, p mq.BatchPlan, frames []mq.Delivery, log *slog.Logger) {
	failed := map[recKey]error{}
	for hi, d := range frames {
		ref := refOf(d)
		for fi, r := range p.Frames {
			if r == ref {
				failedOf(p, fi, hi, failed)
			}
		}
	}
	w.settle(ctx, k, frames, failed, log)
}

// recoverPlan completes an in-doubt plan whose frames held were redelivered to this writer. It
// returns frames that must take the normal path instead (the plan vanished or cannot be rebuilt).
func (w *Writer) recoverPlan(ctx context.Context, k tableKey, tgt targetInfo, p mq.BatchPlan, held []mq.Delivery, log *slog.Logger) []mq.Delivery {
	m := w.deps.Metrics
	log = log.With("plan", p.ID)
	delay := backoff(w.cfg.BackoffMin, w.cfg.BackoffMax, maxAttempts(held))
	cur, ok, err := w.journal.Claim(ctx, p, w.claimLease())
	switch {
	case errors.Is(err, mq.ErrNotFound):
		return held // expired between the lookup and the claim: nothing to complete
	case err != nil:
		m.retries.WithLabelValues("journal").Inc()
		log.Warn("claiming an in-doubt batch failed; frames will be redelivered", "error", err, "retry_in", delay.String())
		w.nakAll(ctx, held, delay, log)
		return nil
	case !ok && cur.Inserted:
		m.inDoubt.WithLabelValues("already_inserted").Inc()
		w.settleFromPlan(ctx, k, cur, held, log)
		return nil
	case !ok:
		m.inDoubt.WithLabelValues("claimed_elsewhere").Inc()
		w.nakAll(ctx, held, w.cfg.BackoffMin, log)
		return nil
	}
	p = cur
	// Rebuild the batch exactly: the plan's frames in plan order, held ones from their delivery.
	heldAt := map[mq.FrameRef]int{}
	for hi, d := range held {
		heldAt[refOf(d)] = hi
	}
	recs := make([][]mq.Record, len(p.Frames))
	for fi, ref := range p.Frames {
		if hi, ok := heldAt[ref]; ok {
			recs[fi] = held[hi].Records()
			continue
		}
		r, err := w.journal.GetFrame(ctx, ref)
		if errors.Is(err, mq.ErrNotFound) {
			// Acknowledged and trimmed: frames are acknowledged only after the whole batch
			// was inserted, but the failed records of the held frames are unknown, so they
			// are inserted again rather than risk losing a dead letter.
			m.inDoubt.WithLabelValues("unrecoverable").Inc()
			log.Warn("a frame of an in-doubt batch is gone; inserting the held frames again (at least once)", "missing_seq", ref.Seq)
			_ = w.journal.Release(context.WithoutCancel(ctx), p)
			return held
		}
		if err != nil {
			m.retries.WithLabelValues("journal").Inc()
			log.Warn("reading a frame of an in-doubt batch failed; frames will be redelivered", "error", err, "retry_in", delay.String())
			_ = w.journal.Release(context.WithoutCancel(ctx), p)
			w.nakAll(ctx, held, delay, log)
			return nil
		}
		recs[fi] = r
	}
	failed := map[recKey]error{}
	err = w.breakerFor(k.tenant).Do(func() (breaker.Outcome, error) {
		err := w.insertBatch(ctx, k, tgt, recs, p.ID, failed)
		return insertOutcome(ctx, err), err
	})
	if err != nil {
		_ = w.journal.Release(context.WithoutCancel(ctx), p)
		var refused *breaker.OpenError
		switch {
		case ctx.Err() != nil:
			w.nakAll(ctx, held, 0, log)
		case errors.As(err, &refused):
			m.retries.WithLabelValues("breaker_open").Inc()
			w.nakAll(ctx, held, refused.RetryIn, log)
		default:
			m.retries.WithLabelValues("transient").Inc()
			log.Warn("re-inserting an in-doubt batch failed transiently; frames will be redelivered", "error", err, "retry_in", delay.String())
			w.nakAll(ctx, held, delay, log)
		}
		return nil
	}
	outcome := "reinserted_deduplicated"
	if !tgt.dedup {
		outcome = "reinserted_not_deduplicated"
		log.Warn("an in-doubt batch was inserted again into a table or server that does not deduplicate inserts: its rows may now be there twice",
			"frames", len(p.Frames))
	}
	m.inDoubt.WithLabelValues(outcome).Inc()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	err = w.journal.MarkInserted(sctx, p, failedRecords(failed))
	cancel()
	if err != nil {
		m.settleFailures.WithLabelValues("journal").Inc()
		log.Warn("marking a recovered batch failed; it stays in doubt and is completed again on redelivery", "error", err)
		w.nakAll(ctx, held, delay, log)
		return nil
	}
	p.Failed = failedRecords(failed)
	w.settleFromPlan(ctx, k, p, held, log)
	return nil
}
