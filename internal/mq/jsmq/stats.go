package jsmq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// Stats implements mq.Inspector.
func (q *Queue) Stats(ctx context.Context, tenant, table string) (mq.Stats, error) {
	if err := checkName(tenant, table); err != nil {
		return mq.Stats{}, err
	}
	if err := q.checkConn(); err != nil {
		return mq.Stats{}, err
	}
	p := q.names.Partition(tenant, table)
	subj := q.names.Subject(tenant, table)
	st := mq.Stats{Partition: p}
	err := q.rpc(ctx, func(ctx context.Context) error {
		s, err := q.js.Stream(ctx, q.names.Stream(p))
		if err != nil {
			return err
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(subj))
		if err != nil {
			return err
		}
		st.Retained = info.State.Subjects[subj]
		floor, err := q.ackFloor(ctx, s)
		if err != nil {
			return err
		}
		st.AckFloor = floor
		raw, err := s.GetMsg(ctx, floor+1, jetstream.WithGetMsgSubject(subj))
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			// Nothing above the floor.
		case err != nil:
			return err
		default:
			st.OldestUnacked = max(q.now().Sub(raw.Time), time.Nanosecond)
			pc, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{
				FilterSubject:     subj,
				DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
				OptStartSeq:       raw.Sequence,
				AckPolicy:         jetstream.AckNonePolicy,
				MemoryStorage:     true,
				Replicas:          1,
				InactiveThreshold: 30 * time.Second,
			})
			if err != nil {
				return err
			}
			ci := pc.CachedInfo()
			st.Pending = ci.NumPending
			_ = s.DeleteConsumer(ctx, ci.Name)
		}
		dlqs, err := q.js.Stream(ctx, q.names.DLQStream())
		if err != nil {
			return err
		}
		dsubj := q.names.DLQSubject(tenant, table)
		dinfo, err := dlqs.Info(ctx, jetstream.WithSubjectFilter(dsubj))
		if err != nil {
			return err
		}
		st.DeadLetters = dinfo.State.Subjects[dsubj]
		return nil
	})
	if err != nil {
		return mq.Stats{}, fmt.Errorf("stats of %s/%s: %w", tenant, table, err)
	}
	return st, nil
}

// ackFloor returns the lowest ack floor among the stream's durable
// consumers that acknowledge (ephemeral replay readers do not count). With
// no such consumer nothing is known to be processed, so it returns 0.
func (q *Queue) ackFloor(ctx context.Context, s jetstream.Stream) (uint64, error) {
	var (
		floor uint64
		found bool
	)
	lister := s.ListConsumers(ctx)
	for ci := range lister.Info() {
		if ci.Config.Durable == "" || ci.Config.AckPolicy == jetstream.AckNonePolicy {
			continue
		}
		if !found || ci.AckFloor.Stream < floor {
			floor = ci.AckFloor.Stream
		}
		found = true
	}
	if err := lister.Err(); err != nil {
		return 0, err
	}
	return floor, nil
}

// Trim implements mq.Trimmer. It purges below min(below, the first frame
// stored at or after olderThan, ack floor + 1).
func (q *Queue) Trim(ctx context.Context, p int, below uint64, olderThan time.Time) (uint64, error) {
	if err := q.checkPartition(p); err != nil {
		return 0, err
	}
	if err := q.checkConn(); err != nil {
		return 0, err
	}
	if below == 0 && olderThan.IsZero() {
		return 0, nil
	}
	var removed uint64
	err := q.rpc(ctx, func(ctx context.Context) error {
		s, err := q.js.Stream(ctx, q.names.Stream(p))
		if err != nil {
			return err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		target := below
		if target == 0 {
			target = info.State.LastSeq + 1
		}
		if !olderThan.IsZero() {
			ageSeq, err := q.firstAtOrAfter(ctx, s, info.State.FirstSeq, info.State.LastSeq, olderThan)
			if err != nil {
				return err
			}
			target = min(target, ageSeq)
		}
		floor, err := q.ackFloor(ctx, s)
		if err != nil {
			return err
		}
		target = min(target, floor+1)
		if target <= info.State.FirstSeq {
			return nil
		}
		removed, _, err = purgeBelow(ctx, s, info.State, target)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("trim partition %d: %w", p, err)
	}
	return removed, nil
}

// firstAtOrAfter binary-searches the first sequence whose frame was stored
// at or after t (last+1 when none).
func (q *Queue) firstAtOrAfter(ctx context.Context, s jetstream.Stream, first, last uint64, t time.Time) (uint64, error) {
	all := q.names.StreamSubjects(0)
	all = all[:len(all)-len("0.>")] + ">"
	lo, hi := first, last+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		raw, err := s.GetMsg(ctx, mid, jetstream.WithGetMsgSubject(all))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			hi = mid
			continue
		}
		if err != nil {
			return 0, err
		}
		if raw.Time.Before(t) {
			lo = raw.Sequence + 1
		} else {
			hi = mid
		}
	}
	return lo, nil
}
