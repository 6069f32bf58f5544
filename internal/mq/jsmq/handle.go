package jsmq

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// Handle is the mq.Queue a backend returns from its constructor, before its
// connection exists: the backend's Start installs the Queue, and every call
// before that fails with mq.ErrUnavailable. Backends embed it so both expose
// exactly the same methods.
type Handle struct {
	mu     sync.RWMutex
	q      *Queue
	closed bool
}

var _ mq.Queue = (*Handle)(nil)

// Install makes q the queue behind h. It fails after Close.
func (h *Handle) Install(q *Queue) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return mq.ErrClosed
	}
	h.q = q
	return nil
}

// Queue returns the installed queue or an error.
func (h *Handle) Queue() (*Queue, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return nil, mq.ErrClosed
	}
	if h.q == nil {
		return nil, fmt.Errorf("%w: queue not started", mq.ErrUnavailable)
	}
	return h.q, nil
}

// MarkClosed closes the installed queue and makes later calls fail with
// mq.ErrClosed. It reports whether this call closed it.
func (h *Handle) MarkClosed(ctx context.Context) bool {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return false
	}
	h.closed = true
	q := h.q
	h.mu.Unlock()
	if q != nil {
		_ = q.Close(ctx)
	}
	return true
}

// Publish implements mq.Publisher.
func (h *Handle) Publish(ctx context.Context, rec mq.Record) (mq.PublishResult, error) {
	q, err := h.Queue()
	if err != nil {
		return mq.PublishResult{}, err
	}
	return q.Publish(ctx, rec)
}

// Partitions implements mq.Consumer.
func (h *Handle) Partitions() int {
	q, err := h.Queue()
	if err != nil {
		return 0
	}
	return q.Partitions()
}

// Subscribe implements mq.Consumer.
func (h *Handle) Subscribe(ctx context.Context, p int) (mq.Subscription, error) {
	q, err := h.Queue()
	if err != nil {
		return nil, err
	}
	return q.Subscribe(ctx, p)
}

// Replay implements mq.Replayer.
func (h *Handle) Replay(ctx context.Context, tenant, table string, from mq.Cursor, fn func(mq.Event) error) error {
	q, err := h.Queue()
	if err != nil {
		return err
	}
	return q.Replay(ctx, tenant, table, from, fn)
}

// Stats implements mq.Inspector.
func (h *Handle) Stats(ctx context.Context, tenant, table string) (mq.Stats, error) {
	q, err := h.Queue()
	if err != nil {
		return mq.Stats{}, err
	}
	return q.Stats(ctx, tenant, table)
}

// Trim implements mq.Trimmer.
func (h *Handle) Trim(ctx context.Context, p int, below uint64, olderThan time.Time) (uint64, error) {
	q, err := h.Queue()
	if err != nil {
		return 0, err
	}
	return q.Trim(ctx, p, below, olderThan)
}

// TrimToFit implements mq.Trimmer.
func (h *Handle) TrimToFit(ctx context.Context, p int, share float64, keep mq.FitKeep) (uint64, error) {
	q, err := h.Queue()
	if err != nil {
		return 0, err
	}
	return q.TrimToFit(ctx, p, share, keep)
}

// DLQ implements mq.Queue; its calls fail like the handle's when the queue
// is not started or closed.
func (h *Handle) DLQ() mq.DeadLetters { return handleDLQ{h} }

// Run implements mq.Queue: it blocks until ctx ends.
func (h *Handle) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// Close implements mq.Queue for handles without resources of their own.
func (h *Handle) Close(ctx context.Context) error {
	h.MarkClosed(ctx)
	return nil
}

type handleDLQ struct{ h *Handle }

func (d handleDLQ) List(ctx context.Context, tenant, table string, after uint64, limit int) ([]mq.DeadEntry, error) {
	q, err := d.h.Queue()
	if err != nil {
		return nil, err
	}
	return q.DLQ().List(ctx, tenant, table, after, limit)
}

func (d handleDLQ) Counts(ctx context.Context, tenant string) (map[mq.TableKey]uint64, error) {
	q, err := d.h.Queue()
	if err != nil {
		return nil, err
	}
	return q.DLQ().Counts(ctx, tenant)
}

func (d handleDLQ) Get(ctx context.Context, id uint64) (mq.DeadEntry, error) {
	q, err := d.h.Queue()
	if err != nil {
		return mq.DeadEntry{}, err
	}
	return q.DLQ().Get(ctx, id)
}

func (d handleDLQ) Replay(ctx context.Context, tenant, table string, limit int) (int, error) {
	q, err := d.h.Queue()
	if err != nil {
		return 0, err
	}
	return q.DLQ().Replay(ctx, tenant, table, limit)
}

func (d handleDLQ) Purge(ctx context.Context, tenant, table string) (uint64, error) {
	q, err := d.h.Queue()
	if err != nil {
		return 0, err
	}
	return q.DLQ().Purge(ctx, tenant, table)
}

// Expire implements mq.DeadLetterExpirer.
func (d handleDLQ) Expire(ctx context.Context, olderThan time.Time) (uint64, error) {
	q, err := d.h.Queue()
	if err != nil {
		return 0, err
	}
	return (*dlq)(q).Expire(ctx, olderThan)
}

var _ mq.DeadLetterExpirer = handleDLQ{}

// MaxRecordBytes returns the largest encoded record Publish accepts (0
// before Start): the api splits bigger requests or answers 413.
func (h *Handle) MaxRecordBytes() int {
	q, err := h.Queue()
	if err != nil {
		return 0
	}
	return q.MaxRecordBytes()
}

// ExtraPartitions implements mq.Drainer.
func (h *Handle) ExtraPartitions(ctx context.Context) (map[int]uint64, error) {
	q, err := h.Queue()
	if err != nil {
		return nil, err
	}
	return q.ExtraPartitions(ctx)
}

var _ mq.Drainer = (*Handle)(nil)
