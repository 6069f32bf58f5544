package jsmq

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// Replay implements mq.Replayer with an ordered consumer filtered on the
// table's subject, starting at the frame that holds position after. An
// ordered consumer recreates itself after a gap, so the reader continues
// live without loss or duplicate.
func (q *Queue) Replay(ctx context.Context, tenant, table string, after mq.Position, fn func(mq.Event) error) error {
	if err := checkName(tenant, table); err != nil {
		return err
	}
	if err := q.checkConn(); err != nil {
		return err
	}
	p := q.names.Partition(tenant, table)
	stream := q.names.Stream(p)
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{q.names.Subject(tenant, table)}}
	switch {
	case after == mq.Latest:
		cfg.DeliverPolicy = jetstream.DeliverNewPolicy
	case after.IsZero():
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	default:
		var info *jetstream.StreamInfo
		err := q.rpc(ctx, func(ctx context.Context) error {
			s, err := q.js.Stream(ctx, stream)
			if err != nil {
				return err
			}
			info, err = s.Info(ctx)
			return err
		})
		if err != nil {
			return fmt.Errorf("stream %s: %w", stream, err)
		}
		// Frames after the requested one were removed: records of this
		// table may have been among them (conservative: the stream does
		// not tell which subjects the trimmed frames had).
		if info.State.FirstSeq > after.Seq+1 {
			first := mq.Position{Seq: info.State.FirstSeq}
			if err := fn(mq.Event{Reset: &mq.Reset{Requested: after, First: first}}); err != nil {
				return err
			}
		}
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = max(after.Seq, 1)
	}
	var cons jetstream.Consumer
	err := q.rpc(ctx, func(ctx context.Context) error {
		var err error
		cons, err = q.js.OrderedConsumer(ctx, stream, cfg)
		return err
	})
	if err != nil {
		return fmt.Errorf("replay consumer on stream %s: %w", stream, err)
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
			if err := fn(mq.Event{Gap: &mq.Gap{Position: gp, Reason: mq.ReasonUndecodable}}); err != nil {
				return err
			}
			continue
		}
		for i := range recs {
			if after != mq.Latest && !after.Less(recs[i].Position) {
				continue
			}
			if err := fn(mq.Event{Record: &recs[i]}); err != nil {
				return err
			}
		}
	}
}
