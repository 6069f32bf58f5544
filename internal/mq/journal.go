package mq

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// FrameRef addresses one stored frame: its partition and stream sequence.
type FrameRef struct {
	Partition int
	Seq       uint64
}

// BatchPlan is the journal entry of one insert batch: which frames it inserts, in order, and
// whether the insert is known to have completed. The ingest writer records it before inserting
// and marks it after every insert statement of the batch succeeded; a frame redelivered while
// its plan is not marked is "in doubt": its batch may or may not have landed.
type BatchPlan struct {
	// ID is PlanID(Frames); insert statements derive their deduplication tokens from it.
	ID string
	// Tenant and Table of every frame of the plan.
	Tenant, Table string
	// Frames in batch order; all of one partition.
	Frames []FrameRef
	// Inserted reports that every insert statement of the batch succeeded (MarkInserted).
	Inserted bool
	// Failed lists the records found permanently failing while inserting (dead-lettered, not
	// inserted); set by MarkInserted.
	Failed []FailedRecord
	// ClaimedUntil is when the current recovery claim expires; zero when unclaimed.
	ClaimedUntil time.Time
	// Revision is the journal's revision of the entry (for Claim); set by Lookup and Claim.
	Revision uint64
}

// FailedRecord is one record of a plan that was dead-lettered instead of inserted.
type FailedRecord struct {
	// Frame indexes BatchPlan.Frames; Record indexes the frame's records.
	Frame, Record int
	// Code and Message are the dead-letter reason.
	Code, Message string
}

// PlanID returns the deterministic id of a batch of frames: a hash of the refs in order.
func PlanID(frames []FrameRef) string {
	h := sha256.New()
	var b [16]byte
	for _, f := range frames {
		binary.BigEndian.PutUint64(b[:8], uint64(f.Partition))
		binary.BigEndian.PutUint64(b[8:], f.Seq)
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Journal records insert batch plans so that a frame redelivered after a crash between an
// insert and its acknowledgement can be recognised and its batch completed exactly once. It is
// implemented by queues that can store plans next to the frames (both JetStream backends); the
// ingest writer finds it by type-asserting its Consumer.
type Journal interface {
	// Plan records p (not inserted, unclaimed) before its insert. It returns once durable.
	Plan(ctx context.Context, p BatchPlan) error
	// Lookup returns, for each of frames (all of tenant/table and one partition) that belongs to
	// a recorded plan, its latest plan. Every plan recorded (by any process) before the call and
	// not forgotten is found. since is a hint (the oldest frame's stored time) that an
	// implementation may use to bound a search; both JetStream backends ignore it.
	Lookup(ctx context.Context, tenant, table string, frames []FrameRef, since time.Time) (map[FrameRef]BatchPlan, error)
	// Claim makes the caller the one recovering p for lease: it returns the current plan and
	// true, or the current plan and false when it is already inserted or another live claim
	// holds it.
	Claim(ctx context.Context, p BatchPlan, lease time.Duration) (BatchPlan, bool, error)
	// Release gives up a claim without marking the plan, so another caller may claim it now.
	Release(ctx context.Context, p BatchPlan) error
	// MarkInserted records that every insert statement of p succeeded and which records failed.
	// It returns once durable; the caller acknowledges the frames only after it.
	MarkInserted(ctx context.Context, p BatchPlan, failed []FailedRecord) error
	// Forget drops p once every frame of it is acknowledged durably (the writer waits a while
	// after the acks: a queue server that crashes may lose the acks of its last moments, and a
	// frame redelivered then must still find its plan). It does not wait for the server: a lost
	// forget only leaves the entry until JournalCompactor removes it.
	Forget(ctx context.Context, p BatchPlan) error
	// GetFrame reads the records of a stored frame by reference. Frames that are not
	// acknowledged are never trimmed, so every frame of a plan that is not marked is readable.
	GetFrame(ctx context.Context, ref FrameRef) ([]Record, error)
}

// JournalCompactor is implemented by journals that keep plans with no expiry (so that a plan
// outlives every redelivery of its frames): the sweeper calls it to remove what Forget leaves.
type JournalCompactor interface {
	// CompactJournal removes the delete markers of plans forgotten before olderThan and the plans
	// written before olderThan whose frames are all acknowledged (a Forget that was lost), and
	// returns how many plans it removed. It never removes a plan with a frame that can still be
	// delivered.
	CompactJournal(ctx context.Context, olderThan time.Time) (uint64, error)
}
