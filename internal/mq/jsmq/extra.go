package jsmq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// ExtraStream is a partition stream numbered at or above the topology's
// partition count: left by a larger mq.partitions. Nothing publishes to it
// any more; the ingest worker drains it through its ingest consumer.
type ExtraStream struct {
	Partition int
	Stream    string
	// Frames is the number of frames it retains (acknowledged or not).
	Frames uint64
	// Unacked is the number of frames its ingest consumer has not
	// acknowledged (all retained frames when it has no consumer).
	Unacked uint64
	// HasConsumer reports whether its durable ingest consumer exists; a
	// stream without one is not drained.
	HasConsumer bool
}

// Extra lists the partition streams of t's prefix numbered Partitions or
// above, in partition order. A stream counts only when its subjects are the
// partition's ingest subjects, so another prefix's streams never do.
func (t Topology) Extra(ctx context.Context, js jetstream.JetStream) ([]ExtraStream, error) {
	n := t.Names()
	lister := js.StreamNames(ctx, jetstream.WithStreamListSubject(n.Prefix+".in.>"))
	var parts []int
	for name := range lister.Name() {
		rest, ok := strings.CutPrefix(name, n.Prefix+"_in_")
		if !ok {
			continue
		}
		p, err := strconv.Atoi(rest)
		if err != nil || p < t.Partitions || strconv.Itoa(p) != rest {
			continue
		}
		parts = append(parts, p)
	}
	if err := lister.Err(); err != nil {
		return nil, fmt.Errorf("list streams: %w", translate(err))
	}
	sort.Ints(parts)
	var out []ExtraStream
	for _, p := range parts {
		s, err := js.Stream(ctx, n.Stream(p))
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", n.Stream(p), translate(err))
		}
		info := s.CachedInfo()
		if !slices.Equal(info.Config.Subjects, []string{n.StreamSubjects(p)}) {
			continue
		}
		e := ExtraStream{Partition: p, Stream: n.Stream(p), Frames: info.State.Msgs, Unacked: info.State.Msgs}
		c, err := s.Consumer(ctx, ConsumerName)
		switch {
		case err == nil:
			ci := c.CachedInfo()
			e.HasConsumer = true
			e.Unacked = ci.NumPending + uint64(ci.NumAckPending)
		case !errors.Is(err, jetstream.ErrConsumerNotFound):
			return nil, fmt.Errorf("consumer %s on stream %s: %w", ConsumerName, n.Stream(p), translate(err))
		}
		out = append(out, e)
	}
	return out, nil
}

// ExtraPartitions implements mq.Drainer: the partitions beyond the
// configured count whose stream has an ingest consumer, with their
// unacknowledged frames. Subscribe accepts them afterwards.
func (q *Queue) ExtraPartitions(ctx context.Context) (map[int]uint64, error) {
	if err := q.checkConn(); err != nil {
		return nil, err
	}
	var extra []ExtraStream
	err := q.rpc(ctx, func(ctx context.Context) error {
		var err error
		extra, err = q.opts.Topology.Extra(ctx, q.js)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[int]uint64, len(extra))
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range extra {
		if e.HasConsumer {
			out[e.Partition] = e.Unacked
			q.extra[e.Partition] = true
		}
	}
	return out, nil
}

// ReportExtra logs, at boot, the frames left in partition streams beyond the
// configured count: a warning with their number when any is unacknowledged
// (the ingest worker drains them), an error for a stream without an ingest
// consumer (nothing drains it). A failed listing (for example a NATS user
// not allowed to list streams) is a warning, not a boot failure.
func (q *Queue) ReportExtra(ctx context.Context) {
	var extra []ExtraStream
	err := q.rpc(ctx, func(ctx context.Context) error {
		var err error
		extra, err = q.opts.Topology.Extra(ctx, q.js)
		return err
	})
	if err != nil {
		q.log.Warn("mq: could not look for partition streams beyond mq.partitions; frames left there by a larger partition count are not drained", "error", err)
		return
	}
	var frames uint64
	var streams []string
	for _, e := range extra {
		if !e.HasConsumer && e.Unacked > 0 {
			q.log.Error("mq: a partition stream beyond mq.partitions holds frames but has no ingest consumer: they are not inserted until it gets one (or mq.partitions covers it again)",
				"stream", e.Stream, "frames", e.Unacked)
			continue
		}
		if e.Unacked > 0 {
			frames += e.Unacked
			streams = append(streams, e.Stream)
		}
	}
	if frames > 0 {
		q.log.Warn("mq: partition streams beyond mq.partitions hold unacknowledged frames (left by a larger partition count); the ingest role drains them",
			"partitions", q.Partitions(), "streams", streams, "frames", frames)
	}
}

var _ mq.Drainer = (*Queue)(nil)
