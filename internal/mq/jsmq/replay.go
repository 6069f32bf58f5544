package jsmq

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// Replay implements mq.Replayer with an ordered consumer filtered on the
// table's subject, starting at the frame that holds position from.After. An
// ordered consumer recreates itself after a gap, so the reader continues
// live without loss or duplicate. The epoch and the retained range come
// from one stream info read before the consumer starts.
func (q *Queue) Replay(ctx context.Context, tenant, table string, from mq.Cursor, fn func(mq.Event) error) error {
	if err := checkName(tenant, table); err != nil {
		return err
	}
	if err := q.checkConn(); err != nil {
		return err
	}
	p := q.names.Partition(tenant, table)
	stream := q.names.Stream(p)
	info, err := q.streamInfo(ctx, stream)
	if err != nil {
		return err
	}
	epoch := q.epoch(info)
	emit := func(e mq.Event) error {
		e.Epoch = epoch
		return fn(e)
	}
	after := from.After
	if reset := startReset(from, epoch, info.State); reset != nil {
		if err := emit(mq.Event{Reset: reset}); err != nil {
			return err
		}
		after = reset.After
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{q.names.Subject(tenant, table)}}
	switch {
	case after == mq.Latest:
		cfg.DeliverPolicy = jetstream.DeliverNewPolicy
	case after.IsZero():
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	default:
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = max(after.Seq, 1)
	}
	var cons jetstream.Consumer
	err = q.rpc(ctx, func(ctx context.Context) error {
		var err error
		cons, err = q.js.OrderedConsumer(ctx, stream, cfg)
		return err
	})
	if err != nil {
		return fmt.Errorf("replay consumer on stream %s: %w", stream, err)
	}
	// The stream may have been recreated between the info read and the
	// consumer: its positions would then be read under the old epoch.
	now, err := q.streamInfo(ctx, stream)
	if err != nil {
		return err
	}
	if !now.Created.Equal(info.Created) {
		return fmt.Errorf("%w: stream %s was recreated while the replay started", mq.ErrUnavailable, stream)
	}
	it, err := cons.Messages()
	if err != nil {
		return translate(err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) && q.isClosed() {
				return mq.ErrClosed
			}
			return translate(err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return err
		}
		recs, err := decodeFrame(msg.Data(), tenant, table, md.Sequence.Stream)
		if err != nil {
			// The ingest side dead-letters the same message (undecodable);
			// the reader reports the skipped position and goes on.
			gp := mq.Position{Seq: md.Sequence.Stream}
			if after != mq.Latest && !after.Less(gp) {
				continue
			}
			if err := emit(mq.Event{Gap: &mq.Gap{Position: gp, Reason: mq.ReasonUndecodable}}); err != nil {
				return err
			}
			continue
		}
		for i := range recs {
			if after != mq.Latest && !after.Less(recs[i].Position) {
				continue
			}
			if err := emit(mq.Event{Record: &recs[i]}); err != nil {
				return err
			}
		}
	}
}

// startReset returns the reset a replay from must start with in a stream of
// state st whose current epoch is epoch, or nil when from can be honoured.
func startReset(from mq.Cursor, epoch string, st jetstream.StreamState) *mq.Reset {
	if from.After == mq.Latest {
		return nil
	}
	// first is the first retained sequence; an empty stream (FirstSeq 0)
	// retains nothing before LastSeq+1.
	first := max(st.FirstSeq, 1)
	restart := mq.Position{Seq: first - 1, Index: ^uint32(0)}
	r := &mq.Reset{Requested: from.After, First: mq.Position{Seq: first}}
	switch {
	case from.Epoch != "" && from.Epoch != epoch:
		r.Reason, r.After = mq.ResetEpoch, restart
	case from.After.Seq > st.LastSeq:
		r.Reason, r.After = mq.ResetAhead, mq.Position{Seq: st.LastSeq, Index: ^uint32(0)}
	case !from.After.IsZero() && first > from.After.Seq+1:
		// Frames after the requested one were removed: records of this
		// table may have been among them (conservative: the stream does
		// not tell which subjects the trimmed frames had).
		r.Reason, r.After = mq.ResetTrimmed, restart
	default:
		return nil
	}
	return r
}
