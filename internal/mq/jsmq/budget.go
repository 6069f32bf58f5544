package jsmq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// The per-tenant budget counts the record bytes a tenant has in the queue that the ingest
// consumer has not acknowledged yet. Publish charges a record, the final settlement of its frame
// (ack, term, dead-letter) gives the bytes back. The count is derived state: the queue is the
// source of truth, so RebuildBudget recomputes it from the partition streams when the queue
// opens, instead of trusting (or persisting) a counter that a crash would leave behind.
//
// Why a scan above the ack floor: the stream keeps acknowledged frames too (SSE history), and its
// per-subject state counts messages, not bytes, so no stream or consumer state gives a tenant's
// unacknowledged bytes directly. Everything at or below the ingest consumer's ack floor is
// acknowledged; everything above it is charged, which costs one read of the backlog per boot (the
// frames the writer reads next anyway) and nothing on the publish path. Frames above the floor
// that were acknowledged out of order before the restart are charged too (the server does not say
// which ones): the count errs towards refusing. Those frames are never delivered again, so their
// charge is returned when the ack floor passes them (sweepBoot, run only when a publish would be
// refused, at most once per bootSweepEvery); frames that are delivered again return theirs when
// they are settled, exactly once.

// bootSweepEvery bounds how often a refused publish looks at the ack floors.
const bootSweepEvery = time.Second

// bootCharge is one frame charged by RebuildBudget.
type bootCharge struct {
	tenant string
	bytes  int64
}

// bootCharges are the frames charged by RebuildBudget that are not released yet, per partition.
// Guarded by Queue.mu.
type bootCharges struct {
	frames  map[int]map[uint64]bootCharge
	lastSeq map[int]uint64 // per partition: frames up to here were stored before the rebuild
	sweptAt time.Time
}

// budgeting reports whether publishes are charged to tenant budgets.
func (q *Queue) budgeting() bool {
	return q.opts.TenantMaxBytes > 0 || q.opts.TenantBudget != nil
}

// budgetOf returns tenant's budget; 0 or less means unlimited.
func (q *Queue) budgetOf(tenant string) int64 {
	if q.opts.TenantBudget != nil {
		switch b := q.opts.TenantBudget(tenant); {
		case b > 0:
			return b
		case b < 0:
			return 0
		}
	}
	return q.opts.TenantMaxBytes
}

// reserve charges n bytes to tenant's budget. A charge that does not fit first returns what
// the ack floors show was acknowledged before this process opened the queue.
func (q *Queue) reserve(ctx context.Context, tenant string, n int64) error {
	if !q.budgeting() {
		return nil
	}
	limit := q.budgetOf(tenant)
	for swept := false; ; swept = true {
		q.mu.Lock()
		used := q.budget[tenant]
		if limit <= 0 || used+n <= limit {
			q.budget[tenant] += n
			q.mu.Unlock()
			return nil
		}
		sweep := !swept && len(q.boot.frames) > 0 && q.now().Sub(q.boot.sweptAt) >= bootSweepEvery
		if sweep {
			q.boot.sweptAt = q.now()
		}
		q.mu.Unlock()
		if !sweep || q.sweepBoot(ctx) != nil {
			return fmt.Errorf("%w: tenant %q has %d unacknowledged bytes (budget %d)", mq.ErrTenantBudget, tenant, used, limit)
		}
	}
}

// release returns n bytes to tenant's budget.
func (q *Queue) release(tenant string, n int64) {
	if !q.budgeting() {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.releaseLocked(tenant, n)
}

func (q *Queue) releaseLocked(tenant string, n int64) {
	q.budget[tenant] -= n
	if q.budget[tenant] <= 0 {
		delete(q.budget, tenant)
	}
}

// releaseFrame returns the charge of the frame at (p, seq), settled for good: a frame stored
// before the rebuild returns its boot charge if the ack floor has not returned it already, a
// later one the bytes its publish charged.
func (q *Queue) releaseFrame(p int, seq uint64, tenant string, n int64) {
	if !q.budgeting() {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if last, ok := q.boot.lastSeq[p]; ok && seq <= last {
		c, charged := q.boot.frames[p][seq]
		if !charged {
			return // at or below the floor at boot, or already returned by sweepBoot
		}
		delete(q.boot.frames[p], seq)
		if len(q.boot.frames[p]) == 0 {
			delete(q.boot.frames, p)
		}
		n, tenant = c.bytes, c.tenant
	}
	q.releaseLocked(tenant, n)
}

// RebuildBudget charges every frame above each partition's ingest ack floor to its tenant. Call
// it once, after the topology exists and before the queue serves publishes; it is a no-op when
// no budget is configured.
func (q *Queue) RebuildBudget(ctx context.Context) error {
	if !q.budgeting() {
		return nil
	}
	frames := map[int]map[uint64]bootCharge{}
	lastSeq := map[int]uint64{}
	for p := range q.opts.Topology.Partitions {
		floor, last, err := q.floorAndLast(ctx, p)
		if err != nil {
			return fmt.Errorf("rebuild tenant budgets: partition %d: %w", p, err)
		}
		lastSeq[p] = last
		if last <= floor {
			continue
		}
		charged, err := q.chargeAbove(ctx, p, floor, last)
		if err != nil {
			return fmt.Errorf("rebuild tenant budgets: partition %d: %w", p, err)
		}
		if len(charged) > 0 {
			frames[p] = charged
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.boot = bootCharges{frames: frames, lastSeq: lastSeq}
	for _, fs := range frames {
		for _, c := range fs {
			q.budget[c.tenant] += c.bytes
		}
	}
	return nil
}

// floorAndLast returns partition p's ingest ack floor and last stored sequence.
func (q *Queue) floorAndLast(ctx context.Context, p int) (floor, last uint64, err error) {
	err = q.rpc(ctx, func(ctx context.Context) error {
		s, err := q.js.Stream(ctx, q.names.Stream(p))
		if err != nil {
			return err
		}
		si, err := s.Info(ctx)
		if err != nil {
			return err
		}
		c, err := s.Consumer(ctx, ConsumerName)
		if err != nil {
			return err
		}
		ci, err := c.Info(ctx)
		if err != nil {
			return err
		}
		floor, last = ci.AckFloor.Stream, si.State.LastSeq
		return nil
	})
	return floor, last, err
}

// chargeAbove reads partition p's frames in (floor, last] with an ordered consumer and returns
// each one's tenant and record bytes (what Publish charged for it). A message that is not a
// frame is skipped: it carries no budget.
func (q *Queue) chargeAbove(ctx context.Context, p int, floor, last uint64) (map[uint64]bootCharge, error) {
	var cons jetstream.Consumer
	err := q.rpc(ctx, func(ctx context.Context) error {
		var err error
		cons, err = q.js.OrderedConsumer(ctx, q.names.Stream(p), jetstream.OrderedConsumerConfig{
			DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: floor + 1,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	// No-wait pulls sized to what is left up to last: every pull is read to its end, none waits
	// for messages that will not come, and nothing beyond last is read.
	out := map[uint64]bootCharge{}
	for next := floor + 1; next <= last; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch, err := cons.FetchNoWait(int(min(1024, last-next+1)))
		if err != nil {
			return nil, translate(err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			md, err := msg.Metadata()
			if err != nil {
				continue
			}
			seq := md.Sequence.Stream
			next = max(next, seq+1)
			if tenant, table, err := q.names.ParseSubject(msg.Subject()); err == nil && seq <= last {
				if recs, err := decodeFrame(msg.Data(), tenant, table, seq); err == nil {
					var b int64
					for i := range recs {
						b += int64(len(recs[i].Payload))
					}
					out[seq] = bootCharge{tenant: tenant, bytes: b}
				}
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) &&
			!errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			return nil, translate(err)
		}
		if n == 0 {
			break // the frames up to last were removed
		}
	}
	return out, nil
}

// sweepBoot returns the boot charges of frames the ingest consumer's ack floor has passed.
func (q *Queue) sweepBoot(ctx context.Context) error {
	q.mu.Lock()
	parts := make([]int, 0, len(q.boot.frames))
	for p := range q.boot.frames {
		parts = append(parts, p)
	}
	q.mu.Unlock()
	for _, p := range parts {
		floor, _, err := q.floorAndLast(ctx, p)
		if err != nil {
			return err
		}
		q.mu.Lock()
		for seq, c := range q.boot.frames[p] {
			if seq <= floor {
				delete(q.boot.frames[p], seq)
				q.releaseLocked(c.tenant, c.bytes)
			}
		}
		if len(q.boot.frames[p]) == 0 {
			delete(q.boot.frames, p)
		}
		q.mu.Unlock()
	}
	return nil
}
