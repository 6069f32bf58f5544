// Package jsmq is the JetStream implementation shared by the embedded and
// the external queue backends: both hand it a nats.go connection, so their
// behaviour cannot drift. See docs/queue.md for the design.
package jsmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// Options configures a Queue.
type Options struct {
	// Topology is the JetStream layout (validated by the caller).
	Topology Topology
	// MaxFrameRecords bounds the records coalesced into one frame.
	MaxFrameRecords int
	// MaxFrameBytes bounds a frame's encoded size; it must stay below the
	// server's max_payload.
	MaxFrameBytes int
	// PublishTimeout bounds one frame publish (the wait for its PubAck).
	PublishTimeout time.Duration
	// TenantMaxBytes is the per-tenant budget of published but not yet
	// acknowledged record bytes tracked by this process; 0 disables it.
	TenantMaxBytes int64
	// TenantBudget, when set, returns tenant's own budget of unacknowledged bytes: 0 means
	// TenantMaxBytes, a negative value means unlimited for that tenant. It is called on every
	// publish, so it must be cheap (a settings lookup).
	TenantBudget func(tenant string) int64
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// AfterReplayPublish, when set, runs in DLQ Replay after an entry's record was republished
	// and before the entry is deleted; an error it returns ends the replay there, as a crash at
	// that point would. A fault hook for tests.
	AfterReplayPublish func(entryID uint64) error
	// Metrics records publish metrics when not nil.
	Metrics *Metrics
	// SoleConsumer says no other process can consume this queue (the embedded server listens
	// on no port): a batch-journal claim left by an earlier life of the process is dead, so it
	// is taken over at once instead of after its lease.
	SoleConsumer bool
	// Log receives what the queue handles on its own (an undecodable
	// message dead-lettered); nil discards.
	Log *slog.Logger
}

// Queue implements mq.Queue on a JetStream connection. It does not own the
// connection: the backend closes it after Close.
type Queue struct {
	opts  Options
	names Names
	nc    *nats.Conn
	js    jetstream.JetStream
	now   func() time.Time
	// instance identifies this Queue value among the processes sharing the server (journal
	// claims record it).
	instance string
	log      *slog.Logger
	// maxRecord is the largest record accepted: the server's max_payload
	// minus room for headers. Records larger than MaxFrameBytes travel
	// alone in their frame.
	maxRecord int

	// storedMu guards lastStored (the last sequence known stored, by stream: noteStored) and
	// epochs (the epoch of each partition stream a keyed frame was marked for: frameID).
	storedMu   sync.Mutex
	lastStored map[string]uint64
	epochs     map[string]string

	mu      sync.Mutex
	closed  bool
	closeCh chan struct{}
	subs    map[*subscription]struct{}
	subjs   map[string]*subjectQueue
	budget  map[string]int64
	// extra holds the partitions beyond the configured count that
	// ExtraPartitions found: they may be subscribed to and journaled.
	extra map[int]bool
	// boot holds the frames charged by RebuildBudget (see budget.go).
	boot bootCharges
	// journalKV, schemaKV and streams cache the journal and schema buckets and the partition
	// stream handles.
	journalKV jetstream.KeyValue
	schemaKV  jetstream.KeyValue
	// jindex is the in-memory journal index, started on the first Lookup.
	jindex  *journalIndex
	streams map[int]jetstream.Stream
	// layoutToken is the layout record's token (ReconcileLayout), folded into every epoch.
	layoutToken string
}

var _ mq.Queue = (*Queue)(nil)

// New returns a Queue over nc; it starts no goroutines.
func New(nc *nats.Conn, opts Options) (*Queue, error) {
	if err := opts.Topology.Validate(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	if opts.MaxFrameRecords <= 0 {
		opts.MaxFrameRecords = DefaultMaxFrameRecords
	}
	if opts.MaxFrameBytes <= 0 {
		opts.MaxFrameBytes = DefaultMaxFrameBytes
	}
	maxRecord := opts.MaxFrameBytes
	if mp := int(nc.MaxPayload()); mp > 0 {
		maxRecord = mp - 4096
		opts.MaxFrameBytes = min(opts.MaxFrameBytes, maxRecord)
	}
	if opts.PublishTimeout <= 0 {
		opts.PublishTimeout = DefaultPublishTimeout
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Queue{
		opts: opts, names: opts.Topology.Names(), nc: nc, js: js, now: now, log: log, maxRecord: maxRecord, instance: nats.NewInbox()[len(nats.InboxPrefix):],
		closeCh: make(chan struct{}),
		subs:    make(map[*subscription]struct{}),
		subjs:   make(map[string]*subjectQueue),
		budget:  make(map[string]int64),
		extra:   make(map[int]bool),
		streams: make(map[int]jetstream.Stream),
	}, nil
}

// JetStream returns the JetStream handle the queue runs on: the backends reconcile their
// topology through it and natscoord keeps its leases in a KV bucket of it.
func (q *Queue) JetStream() jetstream.JetStream { return q.js }

// Names returns the queue's names.
func (q *Queue) Names() Names { return q.names }

// MaxRecordBytes returns the largest encoded record Publish accepts; the
// api splits bigger requests.
func (q *Queue) MaxRecordBytes() int { return q.maxRecord }

// Partitions implements mq.Consumer.
func (q *Queue) Partitions() int { return q.opts.Topology.Partitions }

// DLQ implements mq.Queue.
func (q *Queue) DLQ() mq.DeadLetters { return (*dlq)(q) }

// Run blocks until ctx ends; the connection reconnects by itself.
func (q *Queue) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-q.closeCh:
		return nil
	}
}

// Close ends every subscription; later calls return mq.ErrClosed. It is
// idempotent.
func (q *Queue) Close(context.Context) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	close(q.closeCh)
	subs := make([]*subscription, 0, len(q.subs))
	for s := range q.subs {
		subs = append(subs, s)
	}
	q.mu.Unlock()
	for _, s := range subs {
		s.end(mq.ErrClosed)
	}
	return nil
}

func (q *Queue) isClosed() bool {
	select {
	case <-q.closeCh:
		return true
	default:
		return false
	}
}

// checkConn fails fast when the queue is closed or the connection is not
// connected, instead of letting nats.go buffer the request.
func (q *Queue) checkConn() error {
	if q.isClosed() {
		return mq.ErrClosed
	}
	if st := q.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("%w: connection %s", mq.ErrUnavailable, st)
	}
	return nil
}

func checkName(tenant, table string) error {
	if tenant == "" || table == "" {
		return fmt.Errorf("%w: empty tenant or table", mq.ErrInvalid)
	}
	return nil
}

func (q *Queue) checkPartition(p int) error {
	q.mu.Lock()
	extra := q.extra[p]
	q.mu.Unlock()
	if extra {
		return nil
	}
	if p < 0 || p >= q.opts.Topology.Partitions {
		return fmt.Errorf("%w: partition %d of %d", mq.ErrInvalid, p, q.opts.Topology.Partitions)
	}
	return nil
}

// publishCtx bounds one server round trip: the caller's ctx and
// PublishTimeout. The error of an expired internal timeout is
// mq.ErrUnavailable; the caller's own ctx error stays as is.
func (q *Queue) rpc(ctx context.Context, f func(ctx context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, q.opts.PublishTimeout)
	defer cancel()
	err := f(cctx)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", mq.ErrUnavailable, err)
	}
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return translate(err)
}
