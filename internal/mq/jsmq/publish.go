package jsmq

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// Frame header names (NATS headers of a stored frame, for operators).
const (
	hdrRecords = "Wh-Records"
)

// Group commit. Concurrent publishes to one subject queue up; one of them,
// the leader, takes every queued record (up to the frame bounds), stores
// them as one frame with one synchronous JetStream publish (one fsync under
// SyncAlways), hands each caller its position, and passes leadership to the
// first caller still queued. No goroutine is started: callers do the work,
// and each caller leads at most once, so its latency is bounded by about two
// frame round trips.

type reqState int

const (
	statePending reqState = iota
	stateLeader
	stateInFrame
)

type pubResult struct {
	pos mq.Position
	err error
}

type pubReq struct {
	rec   *mq.Record
	size  int
	state reqState // guarded by subjectQueue.mu
	lead  chan struct{}
	done  chan pubResult
}

type subjectQueue struct {
	subject string
	mu      sync.Mutex
	busy    bool
	pending []*pubReq
}

// Publish implements mq.Publisher.
func (q *Queue) Publish(ctx context.Context, rec mq.Record) (mq.PublishResult, error) {
	if err := checkName(rec.Tenant, rec.Table); err != nil {
		return mq.PublishResult{}, err
	}
	if rec.Claim != nil && (rec.IdempotencyKey == "" || rec.Claim.Marker == nil) {
		return mq.PublishResult{}, fmt.Errorf("%w: a claimed record needs an idempotency key and a marker", mq.ErrInvalid)
	}
	if err := q.checkConn(); err != nil {
		return mq.PublishResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return mq.PublishResult{}, err
	}
	r := rec // the payload is not copied: the caller gives it up (mq.Publisher)
	r.Headers = maps.Clone(rec.Headers)
	if r.AcceptedAt.IsZero() {
		r.AcceptedAt = q.now()
	}
	size := recordSize(&r)
	if size > q.maxRecord {
		return mq.PublishResult{}, fmt.Errorf("%w: %d bytes, at most %d", mq.ErrTooLarge, size, q.maxRecord)
	}
	charge := int64(len(r.Payload))
	if err := q.reserve(ctx, r.Tenant, charge); err != nil {
		return mq.PublishResult{}, err
	}
	var (
		res   mq.PublishResult
		err   error
		start = time.Now()
	)
	defer func() { q.opts.Metrics.observePublish(start, err) }()
	switch {
	case r.Claim != nil:
		res, err = q.publishClaimed(ctx, &r, size)
	case r.IdempotencyKey != "":
		res, err = q.publishKeyed(ctx, &r)
	default:
		res.Position, err = q.groupCommit(ctx, &r, size)
	}
	if err != nil || res.Duplicate {
		q.release(r.Tenant, charge)
	}
	return res, err
}

// msgID scopes an idempotency key to its tenant and table.
func msgID(r *mq.Record) string {
	return EscapeToken(r.Tenant) + "." + EscapeToken(r.Table) + ":" + r.IdempotencyKey
}

// publishKeyed stores a record with an idempotency key as a frame of its
// own whose Nats-Msg-Id is the key, so JetStream drops a repeat within the
// duplicate window and answers with the first sequence.
func (q *Queue) publishKeyed(ctx context.Context, r *mq.Record) (mq.PublishResult, error) {
	msg := q.frameMsg(q.names.Subject(r.Tenant, r.Table), []*mq.Record{r})
	msg.Header.Set(jetstream.MsgIDHeader, msgID(r))
	ack, err := q.publishMsg(ctx, msg)
	if err != nil {
		return mq.PublishResult{}, err
	}
	return mq.PublishResult{Position: mq.Position{Seq: ack.Sequence}, Duplicate: ack.Duplicate}, nil
}

func (q *Queue) frameMsg(subject string, recs []*mq.Record) *nats.Msg {
	msg := nats.NewMsg(subject)
	msg.Data = appendFrame(nil, recs)
	msg.Header.Set(hdrRecords, strconv.Itoa(len(recs)))
	return msg
}

func (q *Queue) subjectQueue(subject string) *subjectQueue {
	q.mu.Lock()
	defer q.mu.Unlock()
	sq := q.subjs[subject]
	if sq == nil {
		sq = &subjectQueue{subject: subject}
		q.subjs[subject] = sq
	}
	return sq
}

func (q *Queue) groupCommit(ctx context.Context, r *mq.Record, size int) (mq.Position, error) {
	sq := q.subjectQueue(q.names.Subject(r.Tenant, r.Table))
	req := &pubReq{rec: r, size: size, lead: make(chan struct{}, 1), done: make(chan pubResult, 1)}
	sq.mu.Lock()
	sq.pending = append(sq.pending, req)
	if !sq.busy {
		sq.busy = true
		req.state = stateLeader
		req.lead <- struct{}{}
	}
	sq.mu.Unlock()
	ctxDone := ctx.Done()
	for {
		select {
		case res := <-req.done:
			return res.pos, res.err
		case <-req.lead:
			q.lead(sq)
		case <-ctxDone:
			sq.mu.Lock()
			st := req.state
			if st == statePending {
				for i, p := range sq.pending {
					if p == req {
						sq.pending = append(sq.pending[:i], sq.pending[i+1:]...)
						break
					}
				}
			}
			sq.mu.Unlock()
			switch st {
			case statePending:
				return mq.Position{}, ctx.Err()
			case stateInFrame:
				// The outcome is unknown: the frame may still be stored.
				return mq.Position{}, ctx.Err()
			}
			// Chosen as leader: the others wait on us, so lead anyway.
			ctxDone = nil
		}
	}
}

// lead stores one frame of queued records and passes leadership on.
func (q *Queue) lead(sq *subjectQueue) {
	sq.mu.Lock()
	var (
		frame []*pubReq
		bytes = 16
	)
	for len(sq.pending) > 0 && len(frame) < q.opts.MaxFrameRecords {
		r := sq.pending[0]
		if len(frame) > 0 && bytes+r.size > q.opts.MaxFrameBytes {
			break
		}
		bytes += r.size
		r.state = stateInFrame
		frame = append(frame, r)
		sq.pending[0] = nil
		sq.pending = sq.pending[1:]
	}
	if len(sq.pending) == 0 {
		sq.pending = nil
	}
	sq.mu.Unlock()

	frame, id := q.markFrame(sq.subject, frame)
	var (
		seq uint64
		err error
	)
	if len(frame) > 0 {
		seq, err = q.publishFrame(sq.subject, frame, id)
	}
	for i, r := range frame {
		r.done <- pubResult{pos: mq.Position{Seq: seq, Index: uint32(i)}, err: err}
	}

	sq.mu.Lock()
	if len(sq.pending) > 0 {
		next := sq.pending[0]
		next.state = stateLeader
		next.lead <- struct{}{}
	} else {
		sq.busy = false
	}
	sq.mu.Unlock()
}

// publishFrame stores frame; id, when set, is its message id (see markFrame).
func (q *Queue) publishFrame(subject string, frame []*pubReq, id string) (uint64, error) {
	if err := q.checkConn(); err != nil {
		return 0, err
	}
	recs := make([]*mq.Record, len(frame))
	for i, r := range frame {
		recs[i] = r.rec
	}
	msg := q.frameMsg(subject, recs)
	if id != "" {
		msg.Header.Set(jetstream.MsgIDHeader, id)
	}
	q.opts.Metrics.observeFrame(len(recs), len(msg.Data))
	// The frame carries other callers' records: one caller's ctx must not
	// cancel it, so only PublishTimeout bounds it.
	ack, err := q.publishMsg(context.Background(), msg)
	if err != nil {
		return 0, err
	}
	if ack.Duplicate {
		if err := q.checkOwnFrame(subject, ack.Sequence); err != nil {
			return 0, err
		}
	}
	return ack.Sequence, nil
}
