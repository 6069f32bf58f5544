package jsmq

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// TrimToFit implements mq.Trimmer. Under the share it costs a stream info. Over it, it purges
// below the sequence the average frame size says brings the stream to the share, capped at the
// ack floor + 1, at the first frame stored at or after keep.All and at the first frame from
// keep.Keyed on that a resolution may read (keyedBound). One purge: the caps are computed for
// that cut, and what the estimate leaves over the share the next call (10 s later) trims.
func (q *Queue) TrimToFit(ctx context.Context, p int, share float64, keep mq.FitKeep) (uint64, error) {
	if err := q.checkPartition(p); err != nil {
		return 0, err
	}
	if !(share > 0 && share <= 1) {
		return 0, fmt.Errorf("%w: share %v: must be above 0 and at most 1", mq.ErrInvalid, share)
	}
	if err := q.checkConn(); err != nil {
		return 0, err
	}
	var removed uint64
	err := q.rpc(ctx, func(ctx context.Context) error {
		s, err := q.js.Stream(ctx, q.names.Stream(p))
		if err != nil {
			return err
		}
		info := s.CachedInfo() // js.Stream read it just now
		if info.Config.MaxBytes <= 0 {
			return nil
		}
		fit := uint64(share * float64(info.Config.MaxBytes))
		st := info.State
		if st.Bytes <= fit {
			return nil
		}
		floor, err := q.ackFloor(ctx, s)
		if err != nil {
			return err
		}
		limit, err := q.fitCap(ctx, s, st, min(fitTarget(st, fit), floor+1), keep)
		if err != nil {
			return err
		}
		if limit <= st.FirstSeq {
			return nil
		}
		removed, _, err = purgeBelow(ctx, s, st, limit)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("trim partition %d to fit: %w", p, err)
	}
	return removed, nil
}

// fitCap lowers want, the first sequence a trim of stream s (in state st) would keep, to the
// first frame stored at or after keep.All, then to the first frame from keep.Keyed on that a
// resolution may read. The searches look no further than want.
func (q *Queue) fitCap(ctx context.Context, s jetstream.Stream, st jetstream.StreamState, want uint64, keep mq.FitKeep) (uint64, error) {
	if want <= st.FirstSeq {
		return want, nil
	}
	if !keep.All.IsZero() {
		seq, err := q.firstAtOrAfter(ctx, s, st.FirstSeq, want-1, keep.All)
		if err != nil {
			return 0, err
		}
		want = min(want, seq)
	}
	if keep.Keyed.IsZero() || want <= st.FirstSeq {
		return want, nil
	}
	window, err := q.firstAtOrAfter(ctx, s, st.FirstSeq, want-1, keep.Keyed)
	if err != nil || window >= want {
		return want, err
	}
	// The frames from window on are younger than keep.Keyed, yet only a keyed one and every
	// frame after it must stay: the others may go.
	bound, err := q.keyedBound(ctx, s.CachedInfo().Config.Name, window, want-1)
	return min(bound, want), err
}

// fitTarget is the first sequence to keep for a stream in state st to hold at most fit bytes,
// estimated from its average frame size. Sequences deleted inside the range make it keep more
// than needed, which the next call sees.
func fitTarget(st jetstream.StreamState, fit uint64) uint64 {
	if st.Msgs == 0 || st.Bytes <= fit {
		return st.FirstSeq
	}
	avg := max(st.Bytes/st.Msgs, 1)
	n := (st.Bytes - fit + avg - 1) / avg
	return min(st.FirstSeq+n, st.LastSeq+1)
}

// purgeBelow purges every frame of s below target and returns how many went and the stream's
// state afterwards. Frames published meanwhile are told apart by the last sequence: a partition
// stream above the purge is only appended to.
func purgeBelow(ctx context.Context, s jetstream.Stream, before jetstream.StreamState, target uint64) (uint64, jetstream.StreamState, error) {
	if err := s.Purge(ctx, jetstream.WithPurgeSequence(target)); err != nil {
		return 0, before, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, before, err
	}
	after := info.State
	total := before.Msgs + (after.LastSeq - min(before.LastSeq, after.LastSeq))
	return total - min(after.Msgs, total), after, nil
}

// fitScanLimit bounds the frame headers one keyedBound reads, so that a check stays well within
// the queue's RPC timeout (about 12 µs a header on the embedded server): what it did not read
// stays for the next check.
const fitScanLimit = 10_000

// keyedBound returns the sequence of the first frame from first to last that carries a message
// id: a keyed request's frame (a claimed request's shared frame, or a frame of its own), a fence,
// or a dead letter's replay, which a retry, a boot (ResolveFrames) or a replay read back. Every
// frame after it stays too: ResolveFrames reads a marked frame's partition from the sequence
// its id names, or the first retained frame, onwards. Frames without an id hold only unkeyed
// records, which nothing reads back. When none of the frames it reads carries an id, it returns
// the sequence after the last one read (last + 1 when it read them all).
func (q *Queue) keyedBound(ctx context.Context, stream string, first, last uint64) (uint64, error) {
	bound, read := last+1, 0
	err := q.scanHeaders(ctx, stream, first, last, func(seq uint64, h nats.Header) bool {
		read++
		if h.Get(jetstream.MsgIDHeader) != "" {
			bound = seq
			return false
		}
		if read >= fitScanLimit {
			bound = seq + 1
			return false
		}
		return true
	})
	return bound, err
}
