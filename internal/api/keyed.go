package api

import (
	"context"
	"fmt"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/mq"
)

// FaultPoint names a point of the keyed publish path where Deps.Fault is called, so that a test
// can crash the process exactly there (the wavehouse_faults build's --fault-kill-after).
type FaultPoint string

const (
	// FaultKeyedMarked is after a shared frame's claims were marked with its id (durably),
	// before the frame is published.
	FaultKeyedMarked FaultPoint = "keyed_marked"
	// FaultKeyedPublished is after a keyed request's rows were published, before its
	// idempotency record is committed.
	FaultKeyedPublished FaultPoint = "keyed_published"
	// FaultCommitLost is where a keyed request's 2xx is about to be committed: a hook that
	// returns true there has the commit skipped, as a crash takes an unsynced one, and the
	// answer sent anyway; FaultKeyedAnswered follows, once the answer is flushed to the client.
	FaultCommitLost FaultPoint = "commit_lost"
	// FaultKeyedAnswered is after the answer of a request whose commit FaultCommitLost skipped
	// was flushed to the client.
	FaultKeyedAnswered FaultPoint = "keyed_answered"
)

// fault calls Deps.Fault at point p, when it is set, and returns its answer.
func (a *API) fault(p FaultPoint) bool {
	return a.deps.Fault != nil && a.deps.Fault(p)
}

// keyedRecord is what a claimed request's publish carries: the queue message id of the request
// and its claim, which lets it join the group commit (mq.Claim).
type keyedRecord struct {
	queueKey string
	claim    *mq.Claim
}

// keyed returns the queue side of a won claim. prior is the frame an earlier attempt of the
// request was marked with, which the queue resolves before publishing again.
func (a *API) keyed(c *claim) *keyedRecord {
	return &keyedRecord{queueKey: c.queueKey(), claim: &mq.Claim{
		Marker: a.marker, Ref: dedupe.Owned{Key: c.key, Token: c.token}, Prior: c.prior,
	}}
}

// claimMarker marks claims in the dedupe store for the queue (mq.FrameMarker): one Store.Mark
// per frame, however many keyed requests it holds.
type claimMarker struct {
	a *API
}

// MarkFrame implements mq.FrameMarker.
func (m claimMarker) MarkFrame(ctx context.Context, frame string, until time.Time, refs []any) []error {
	owned := make([]dedupe.Owned, len(refs))
	for i, r := range refs {
		o, ok := r.(dedupe.Owned)
		if !ok {
			errs := make([]error, len(refs))
			for j := range errs {
				errs[j] = fmt.Errorf("api: claim ref %T is not a dedupe.Owned", r)
			}
			return errs
		}
		owned[i] = o
	}
	errs := m.a.deps.Dedupe.Mark(ctx, frame, until, owned)
	m.a.fault(FaultKeyedMarked)
	return errs
}
