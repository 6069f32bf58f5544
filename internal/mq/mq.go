package mq

import (
	"context"
	"time"
)

// Publisher stores records durably.
type Publisher interface {
	// Publish stores rec and returns only when it is durable under the
	// backend's sync mode (fsynced under sync=always; stored by a quorum on
	// external NATS). It is safe for concurrent use; concurrent publishes to
	// one table are coalesced into one stored frame. ctx bounds the wait:
	// when it ends first, the record may still be stored. Publish does not
	// retry. rec.Headers is copied; rec.Payload is not: the queue may read
	// it until the record's frame is built, even after Publish returned on
	// an ended ctx, so the caller must never modify it afterwards.
	Publish(ctx context.Context, rec Record) (PublishResult, error)
}

// Consumer hands out subscriptions to the durable ingest consumer of each
// partition. Several subscriptions (even in several processes) on one
// partition share its messages.
type Consumer interface {
	// Partitions returns the number of partitions.
	Partitions() int
	// Subscribe returns a pull subscription on partition p.
	Subscribe(ctx context.Context, p int) (Subscription, error)
}

// Drainer is implemented by consumers whose queue can hold frames in
// partitions numbered Partitions() or above: streams left by a larger
// partition count. New records never go there; the ingest worker subscribes
// to each until it holds nothing unacknowledged, so lowering the partition
// count strands no row.
type Drainer interface {
	// ExtraPartitions returns every partition numbered Partitions() or above
	// that exists, with the number of its frames not yet acknowledged by its
	// ingest consumer. Subscribe accepts these partitions afterwards.
	ExtraPartitions(ctx context.Context) (map[int]uint64, error)
}

// Subscription pulls frames of one partition.
type Subscription interface {
	// Fetch returns up to max deliveries, waiting at most wait (or until ctx
	// ends) for the first one. An empty result with a nil error means caught
	// up; a failed pull is an error (ErrUnavailable, ErrDeliveryEnded,
	// ctx.Err()), never an empty result. A stored message that is not a
	// decodable frame is never returned: it is dead-lettered with its raw
	// bytes (ReasonUndecodable) and acknowledged, or, when that fails,
	// handed back for redelivery.
	Fetch(ctx context.Context, max int, wait time.Duration) ([]Delivery, error)
	// Done is closed exactly once, when delivery ended for good (the queue
	// closed, the subscription closed, or the consumer was deleted).
	Done() <-chan struct{}
	// Err returns nil before Done is closed, then an error wrapping
	// ErrDeliveryEnded and the cause.
	Err() error
	// Close ends the subscription; it is idempotent.
	Close() error
}

// Delivery is one frame delivered to a subscription: records of one tenant
// and table, acknowledged as a unit. The ingest worker inserts all records
// of a delivery together, then settles it exactly once.
type Delivery interface {
	// Records returns the frame's records with their positions. The caller
	// must not modify them.
	Records() []Record
	// Meta returns delivery metadata.
	Meta() DeliveryMeta
	// Ack acknowledges the frame and waits for the server to confirm.
	Ack(ctx context.Context) error
	// Nak asks for redelivery after delay.
	Nak(ctx context.Context, delay time.Duration) error
	// Term stops redelivery of the frame without dead-lettering it.
	Term(ctx context.Context, reason string) error
}

// Extender is implemented by deliveries whose redelivery can be postponed: a holder that keeps a
// frame longer than the ack wait (a batch waiting behind a slow insert, a backlog draining)
// calls InProgress well within every ack wait so the queue does not hand the frame out again
// meanwhile. It fails with ErrSettled after the delivery was settled.
type Extender interface {
	InProgress(ctx context.Context) error
}

// DeadLetterer is implemented by deliveries that can move records to the
// dead-letter queue.
type DeadLetterer interface {
	// DeadLetter stores the records at the given indexes (all records when
	// none are given) in the dead-letter queue with reason, then
	// acknowledges the frame: the caller must already have inserted the
	// other records. The delivery is settled afterwards.
	DeadLetter(ctx context.Context, reason Reason, indexes ...int) error
}

// DeadLetters reads and manages the dead-letter queue.
type DeadLetters interface {
	// List returns up to limit entries of tenant/table with ID greater than
	// after, in ID order (pagination: pass the last ID seen).
	List(ctx context.Context, tenant, table string, after uint64, limit int) ([]DeadEntry, error)
	// Counts returns the number of entries per tenant/table; an empty
	// tenant means every tenant.
	Counts(ctx context.Context, tenant string) (map[TableKey]uint64, error)
	// Get reads one entry back; ErrNotFound when absent.
	Get(ctx context.Context, id uint64) (DeadEntry, error)
	// Replay republishes up to limit entries of tenant/table (oldest first)
	// to the ingest subject and removes each after its publish succeeded.
	// Entries of undecodable messages (Raw set) are left in place. It
	// returns how many were replayed.
	Replay(ctx context.Context, tenant, table string, limit int) (int, error)
	// Purge removes all entries of tenant/table and returns how many.
	Purge(ctx context.Context, tenant, table string) (uint64, error)
}

// DeadLetterExpirer is implemented by dead-letter queues that can apply a retention: the
// sweeper calls it with now minus the configured retention.
type DeadLetterExpirer interface {
	// Expire removes every entry dead-lettered before olderThan and returns how many.
	Expire(ctx context.Context, olderThan time.Time) (uint64, error)
}

// Replayer reads one table's history in order.
type Replayer interface {
	// Replay calls fn for every record of tenant/table strictly after
	// from.After (Latest: only new ones), in position order, first from
	// retained history and then live, until ctx ends (it then returns
	// ctx.Err()) or fn returns an error (returned as is). When from cannot
	// be honoured, the first event is a Reset saying why and after which
	// position delivery continues: from.Epoch is set and is not the
	// table's current epoch (delivery starts at the first retained
	// record), from.After is past the last stored message (delivery
	// continues after it), or history right after from.After was trimmed
	// (delivery continues at the first retained record). A stored message
	// of the table that cannot be decoded is skipped with a Gap event and
	// the replay goes on. Every event carries the epoch of the history it
	// indexes. fn runs on one goroutine at a time.
	Replay(ctx context.Context, tenant, table string, from Cursor, fn func(Event) error) error
}

// Inspector reports queue statistics.
type Inspector interface {
	// Stats returns statistics of one tenant/table.
	Stats(ctx context.Context, tenant, table string) (Stats, error)
}

// Trimmer removes retained history.
type Trimmer interface {
	// Trim removes frames of partition p with sequence below below, or
	// stored before olderThan when it is not zero, but never a frame above
	// the ack floor of any durable consumer of the partition. It returns the
	// number of frames removed.
	Trim(ctx context.Context, p int, below uint64, olderThan time.Time) (uint64, error)
	// TrimToFit removes the oldest frames of partition p while the stream
	// holds more than share (0 < share <= 1) of its byte bound, until it
	// holds at most that share. It never removes a frame above the ack floor
	// of any durable consumer of the partition, nor one keep says stays, so
	// it stops above the share when only such frames would bring it there.
	// It may remove a few frames more than needed (it estimates from the
	// average frame size). It does nothing on a stream without a byte
	// bound. It returns the number of frames removed.
	TrimToFit(ctx context.Context, p int, share float64, keep FitKeep) (uint64, error)
}

// FitKeep is what Trimmer.TrimToFit keeps whatever the share.
type FitKeep struct {
	// All: every frame stored at or after it stays (zero: no such bound).
	All time.Time
	// Keyed: the first frame stored at or after it that carries a message id (a keyed
	// request's frame, a fence, a dead letter's replay: what a retry, a boot or a replay reads
	// back) and every frame after it stay (zero: no such bound). Frames before it go like older
	// ones: they hold only unkeyed records.
	Keyed time.Time
}

// Queue is the full handle a backend provides.
type Queue interface {
	Publisher
	Consumer
	Replayer
	Inspector
	Trimmer
	// DLQ returns the dead-letter queue.
	DLQ() DeadLetters
	// Run blocks until ctx ends or the queue fails; it returns nil on ctx
	// end.
	Run(ctx context.Context) error
	// Close releases the queue; it is idempotent. Calls made after Close
	// return ErrClosed.
	Close(ctx context.Context) error
}
