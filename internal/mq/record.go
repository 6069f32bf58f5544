package mq

import (
	"context"
	"time"
)

// Standard record header names.
const (
	// HeaderTraceparent carries the W3C trace context of the request that
	// produced the record.
	HeaderTraceparent = "traceparent"
)

// Record is one published unit: the rows of one ingest request (already
// encoded by the caller) for one tenant and table.
type Record struct {
	// Tenant and Table route the record. Both must be non-empty; any
	// characters are allowed (they are escaped in subjects).
	Tenant string
	Table  string
	// Payload is the encoded rows. The queue does not interpret it.
	Payload []byte
	// Headers are the record's own headers (for example traceparent).
	Headers map[string]string
	// IdempotencyKey, when set, makes a repeat of the same key within the
	// queue's dedupe window a no-op that returns the first position. Without
	// a Claim the record is stored as a frame of its own whose message id is
	// the key; with one it joins the group commit (see Claim).
	IdempotencyKey string
	// Claim, with IdempotencyKey, lets the record share a frame with others:
	// see Claim. Nil on records read from the queue.
	Claim *Claim
	// AcceptedAt is when the api accepted the request; zero means now.
	AcceptedAt time.Time
	// Position is set on records read from the queue.
	Position Position
}

// Claim is the idempotency claim of a keyed record published in a shared
// frame. The frame's leader gives the frame a random id, has every claim of
// the frame marked with it (FrameMarker, durably) and only then publishes
// the frame with that id as its message id, so a publish repeated within the
// duplicate window is dropped. Records whose mark failed are left out of the
// frame and get the marker's error.
//
// Prior is the frame id an earlier attempt of the same request was marked
// with (the process died, or the publish failed with an unknown outcome).
// Publish resolves it first: it stores a fence under that message id. If the
// id was taken by a frame holding a record with this IdempotencyKey, nothing
// is stored and the result is a Duplicate with that record's position;
// otherwise the fence makes sure the earlier frame can never be stored later
// and the record is published anew. Resolution is exact while the earlier
// frame is within the duplicate window, which is why the marker keeps a mark
// only until then.
type Claim struct {
	// Marker marks the claims of a frame before it is published.
	Marker FrameMarker
	// Ref identifies the claim to Marker; the queue does not look inside.
	Ref any
	// Prior is the unresolved frame of an earlier attempt, or empty.
	Prior string
}

// FrameMarker durably records that the claims refs are about to be
// published in frame frame, resolvable until until. It returns one error per
// ref, in order; a ref with an error is not published.
type FrameMarker interface {
	MarkFrame(ctx context.Context, frame string, until time.Time, refs []any) []error
}

// PublishResult is the outcome of a durable publish.
type PublishResult struct {
	// Position is where the record is stored.
	Position Position
	// Duplicate reports that the idempotency key was seen within the dedupe
	// window and nothing new was stored; Position is the original one.
	Duplicate bool
}

// DeliveryMeta describes one delivery of a frame to a subscription.
type DeliveryMeta struct {
	// Partition is the partition the frame was read from.
	Partition int
	// Seq is the stream sequence of the frame.
	Seq uint64
	// Attempts counts deliveries of this frame, starting at 1.
	Attempts int
	// StoredAt is when the frame was stored, the time of its first delivery
	// opportunity.
	StoredAt time.Time
}

// Reason explains why records were dead-lettered.
type Reason struct {
	// Code is a stable machine code, for example "type_mismatch".
	Code string
	// Message is the human-readable error.
	Message string
	// Attempts is how many times insertion was attempted; zero means the
	// delivery's attempt count.
	Attempts int
	// FirstFailure and LastFailure bound the failures; zero values mean the
	// frame's stored time and now.
	FirstFailure time.Time
	LastFailure  time.Time
}

// DeadEntry is one dead-lettered record.
type DeadEntry struct {
	// ID addresses the entry in the dead-letter queue (Get, pagination).
	ID uint64
	// Record is the original record, with its original Position.
	Record Record
	// Reason is why it was dead-lettered.
	Reason Reason
	// DeadAt is when it was dead-lettered.
	DeadAt time.Time
	// Raw is set on an entry of a stored message that could not be decoded
	// into records (reason code ReasonUndecodable): it keeps the message as
	// it was stored. Record then carries only the tenant and table (when
	// the subject names them) and the position of the message; its Payload
	// is empty. Such an entry is never replayed.
	Raw *RawMessage
}

// ReasonUndecodable is the dead-letter code of a stored message on an
// ingest subject that is not a decodable frame (wrong subject, unknown
// format, corrupt bytes).
const ReasonUndecodable = "undecodable"

// RawMessage is a stored queue message kept byte for byte.
type RawMessage struct {
	// Subject is the subject it was stored under.
	Subject string
	// Partition and Seq locate it: the partition stream and its sequence.
	Partition int
	Seq       uint64
	// Data is the message body as stored.
	Data []byte
	// Headers are the message headers as stored (first value of each).
	Headers map[string]string
}

// TableKey names a tenant's table.
type TableKey struct {
	Tenant string
	Table  string
}

// Stats describes one tenant/table in the queue.
type Stats struct {
	// Partition the table maps to.
	Partition int
	// Retained is the number of frames of this table still stored (acked
	// or not, until trimmed).
	Retained uint64
	// Pending is the number of frames of this table above the partition's
	// ack floor: not yet acknowledged by the ingest consumer (the lag).
	Pending uint64
	// AckFloor is the partition consumer's ack floor: every frame at or
	// below it is acknowledged.
	AckFloor uint64
	// OldestUnacked is the age of the oldest frame of this table above the
	// ack floor; zero when Pending is zero.
	OldestUnacked time.Duration
	// DeadLetters is the number of dead-letter entries of this table.
	DeadLetters uint64
}

// Event is what Replay hands to its callback: exactly one of a record; a
// reset telling that the requested cursor cannot be honoured (its history
// was trimmed, it belongs to another epoch, or it is past the head) and
// where delivery continues instead; or a gap telling that a stored message
// of this table could not be decoded and was skipped.
type Event struct {
	Record *Record
	Reset  *Reset
	Gap    *Gap
	// Epoch names the history the event's positions index; it is the same
	// for every event of one Replay call. A Cursor{Epoch, After} built from
	// it resumes exactly after the event.
	Epoch string
}

// Gap reports a stored message of the table that Replay skipped because it
// holds no decodable records. The ingest side dead-letters the same message
// with its raw bytes (ReasonUndecodable).
type Gap struct {
	// Position is the first position of the skipped message (index 0);
	// every position of its sequence is skipped.
	Position Position
	// Reason is a stable machine code, ReasonUndecodable.
	Reason string
}

// Reset reports that a replay could not start where it was asked to.
type Reset struct {
	// Reason is ResetTrimmed, ResetEpoch or ResetAhead.
	Reason string
	// Requested is the position the replay was asked to start after (in
	// the requested epoch).
	Requested Position
	// First is the first position still retained (Seq is the stream's
	// first sequence; it may hold no record of this table).
	First Position
	// After is where delivery continues: the records that follow are
	// exactly those strictly after it in the current epoch. A cursor at
	// After does not report the same reset again.
	After Position
}
