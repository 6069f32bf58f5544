package jsmq

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// Keyed records in shared frames (mq.Claim; docs/adr/0012). A frame holding
// claimed records carries a message id of its own (frameID), written to every claim before
// the frame is published; a later attempt of one of its requests resolves the
// id by storing a fence under it (an empty frame with hdrFence): JetStream's
// duplicate window then either drops the fence and names the frame, or
// stores the fence, after which the frame itself would be dropped. An id
// resolved from the stream at boot (resolve.go) is answered without a fence.

// hdrFence marks a fence: a frame of no records, acknowledged unread by the
// consumer.
const hdrFence = "Wh-Fence"

// errFenced is the error of a frame whose message id a fence took first.
var errFenced = fmt.Errorf("%w: a retry fenced this frame off before it was stored; retry with the same key", mq.ErrUnavailable)

// publishClaimed publishes a record that carries a claim: its earlier
// attempt's frame is resolved first, then it joins the group commit.
func (q *Queue) publishClaimed(ctx context.Context, r *mq.Record, size int) (mq.PublishResult, error) {
	if prior := r.Claim.Prior; prior != "" {
		if id, pos, ok := resolvedPosition(prior); ok {
			// Resolved at boot from the stored frame (ResolveFrames): nothing to fence, unless
			// the record there is another request's.
			if q.holds(ctx, r, pos) {
				q.opts.Metrics.observeResolve(true)
				return mq.PublishResult{Position: pos, Duplicate: true}, nil
			}
			prior = id
		}
		pos, found, err := q.resolve(ctx, r, prior)
		if err != nil {
			return mq.PublishResult{}, err
		}
		q.opts.Metrics.observeResolve(found)
		if found {
			return mq.PublishResult{Position: pos, Duplicate: true}, nil
		}
	}
	pos, err := q.groupCommit(ctx, r, size)
	return mq.PublishResult{Position: pos}, err
}

// resolve tells whether frame, the message id an earlier attempt of r was
// marked with, is stored holding r's key, and at which position. When it is
// not, the fence it stores keeps it from ever being stored.
func (q *Queue) resolve(ctx context.Context, r *mq.Record, frame string) (mq.Position, bool, error) {
	subject := q.names.Subject(r.Tenant, r.Table)
	msg := nats.NewMsg(subject)
	msg.Data = appendFrame(nil, nil)
	msg.Header.Set(hdrRecords, "0")
	msg.Header.Set(hdrFence, "1")
	msg.Header.Set(jetstream.MsgIDHeader, frame)
	ack, err := q.publishMsg(ctx, msg)
	if err != nil {
		return mq.Position{}, false, err
	}
	if !ack.Duplicate {
		return mq.Position{}, false, nil // the fence is stored: the frame never will be
	}
	stored, err := q.storedMsg(ctx, r.Tenant, r.Table, ack.Sequence)
	if err != nil {
		return mq.Position{}, false, err
	}
	if stored.Header.Get(hdrFence) != "" {
		return mq.Position{}, false, nil // an earlier resolution fenced it
	}
	recs, err := decodeFrame(stored.Data, r.Tenant, r.Table, ack.Sequence)
	if err != nil {
		return mq.Position{}, false, err
	}
	for _, rec := range recs {
		if rec.IdempotencyKey == r.IdempotencyKey {
			return rec.Position, true, nil
		}
	}
	// The claim was marked but its mark's outcome was unknown to the leader,
	// which left the record out of the frame.
	return mq.Position{}, false, nil
}

// storedMsg reads the message at seq of tenant/table's partition stream.
func (q *Queue) storedMsg(ctx context.Context, tenant, table string, seq uint64) (*jetstream.RawStreamMsg, error) {
	return q.storedMsgIn(ctx, q.names.Stream(q.names.Partition(tenant, table)), seq)
}

// markFrame has the claims among frame marked with a new frame id. It answers
// every request whose mark failed (dropping it from the frame) and returns
// the requests to publish and the frame's message id ("" when none is
// claimed).
func (q *Queue) markFrame(subject string, frame []*pubReq) ([]*pubReq, string) {
	byMarker := map[mq.FrameMarker][]int{}
	for i, r := range frame {
		if r.rec.Claim != nil {
			byMarker[r.rec.Claim.Marker] = append(byMarker[r.rec.Claim.Marker], i)
		}
	}
	if len(byMarker) == 0 {
		return frame, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), q.opts.PublishTimeout)
	defer cancel()
	failed := make([]error, len(frame))
	id, idErr := q.frameID(ctx, subject)
	until := q.now().Add(q.opts.Topology.DuplicateWindow)
	for m, idx := range byMarker {
		if idErr != nil {
			for _, i := range idx {
				failed[i] = fmt.Errorf("mq: frame id: %w", idErr)
			}
			continue
		}
		refs := make([]any, len(idx))
		for j, i := range idx {
			refs[j] = frame[i].rec.Claim.Ref
		}
		errs := m.MarkFrame(ctx, id, until, refs)
		for j, i := range idx {
			if j >= len(errs) {
				failed[i] = errors.New("mq: frame marker returned too few results")
			} else if errs[j] != nil {
				failed[i] = fmt.Errorf("mq: mark frame: %w", errs[j])
			}
		}
	}
	kept := frame[:0:0]
	marked := 0
	for i, r := range frame {
		if failed[i] != nil {
			r.done <- pubResult{err: failed[i]}
			continue
		}
		if r.rec.Claim != nil {
			marked++
		}
		kept = append(kept, r)
	}
	q.opts.Metrics.observeMarked(marked, len(frame)-len(kept))
	if marked == 0 {
		return kept, ""
	}
	return kept, id
}

// checkOwnFrame is called when the publish of a frame with message id
// returned a duplicate at seq: the frame's own earlier attempt (an ack lost
// and the publish retried) is success; a fence means the frame is not stored.
func (q *Queue) checkOwnFrame(subject string, seq uint64) error {
	tenant, table, err := q.names.ParseSubject(subject)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), q.opts.PublishTimeout)
	defer cancel()
	msg, err := q.storedMsg(ctx, tenant, table, seq)
	if err != nil {
		return err
	}
	if msg.Header.Get(hdrFence) != "" {
		return errFenced
	}
	return nil
}

// isFence reports whether a delivered message is a fence.
func isFence(msg jetstream.Msg) bool {
	return msg.Headers().Get(hdrFence) != ""
}
