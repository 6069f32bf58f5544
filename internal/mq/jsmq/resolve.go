package jsmq

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// A keyed frame's message id (markFrame) is "frame-<random>.<epoch>.<after>": the epoch of its
// partition stream and a stream sequence it is stored after (the last frame its subject's
// leaders stored when it was marked). ResolveFrames reads both to find the frame from the
// stream itself, after the duplicate window within which a fence finds it. A frame found so is
// recorded as "<id>@<position>" (resolvedPosition), which the next attempt of its request takes
// as the answer without publishing anything.

// publishMsg publishes msg within PublishTimeout and notes the sequence it was stored at: the
// last one known of its stream, a lower bound of every frame published after (frameID).
func (q *Queue) publishMsg(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
	var ack *jetstream.PubAck
	err := q.rpc(ctx, func(ctx context.Context) error {
		var err error
		ack, err = q.js.PublishMsg(ctx, msg)
		return err
	})
	if err == nil {
		q.noteStored(ack.Stream, ack.Sequence)
	}
	return ack, err
}

// noteStored records that stream holds a message at seq.
func (q *Queue) noteStored(stream string, seq uint64) {
	q.storedMu.Lock()
	defer q.storedMu.Unlock()
	if q.lastStored == nil {
		q.lastStored = map[string]uint64{}
	}
	q.lastStored[stream] = max(q.lastStored[stream], seq)
}

// frameID returns a new message id for a keyed frame of subject: its stream's epoch and the
// last sequence known stored in that stream by any subject (read from the stream when this
// process stored nothing there yet), so the frame is stored after it.
func (q *Queue) frameID(ctx context.Context, subject string) (string, error) {
	tenant, table, err := q.names.ParseSubject(subject)
	if err != nil {
		return "", err
	}
	stream := q.names.Stream(q.names.Partition(tenant, table))
	q.storedMu.Lock()
	epoch, known := q.epochs[stream]
	after := q.lastStored[stream]
	q.storedMu.Unlock()
	if !known {
		info, err := q.streamInfo(ctx, stream)
		if err != nil {
			return "", err
		}
		epoch = q.epoch(info)
		q.noteStored(stream, info.State.LastSeq)
		q.storedMu.Lock()
		if q.epochs == nil {
			q.epochs = map[string]string{}
		}
		q.epochs[stream] = epoch
		after = q.lastStored[stream]
		q.storedMu.Unlock()
	}
	return "frame-" + rand.Text() + "." + epoch + "." + strconv.FormatUint(after, 10), nil
}

// parseFrameID returns the epoch and the lower bound a frame id carries (ok false for an id
// without them: one written before ids carried them, or a fence's).
func parseFrameID(id string) (epoch string, after uint64, ok bool) {
	rest, found := strings.CutPrefix(id, "frame-")
	if !found {
		return "", 0, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 || parts[1] == "" {
		return "", 0, false
	}
	after, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return parts[1], after, true
}

// resolvedPosition returns the frame id and the position of a frame id recorded as resolved
// ("<id>@<position>").
func resolvedPosition(frame string) (string, mq.Position, bool) {
	id, pos, found := strings.Cut(frame, "@")
	if !found {
		return "", mq.Position{}, false
	}
	p, err := mq.ParsePosition(pos)
	return id, p, err == nil
}

// holds reports whether the record at pos is r's request, as ResolveFrames found it. When the
// frame cannot be read (history trimmed, the server not answering), the resolution stands: the
// dedupe store gives a resolved frame only to the request it was resolved for.
func (q *Queue) holds(ctx context.Context, r *mq.Record, pos mq.Position) bool {
	msg, err := q.storedMsg(ctx, r.Tenant, r.Table, pos.Seq)
	if err != nil {
		return true
	}
	recs, err := decodeFrame(msg.Data, r.Tenant, r.Table, pos.Seq)
	if err != nil || int(pos.Index) >= len(recs) {
		return false
	}
	return recs[pos.Index].IdempotencyKey == r.IdempotencyKey
}

// MarkedFrame is a claim marked with a frame whose outcome its dedupe store may have lost: the
// request's tenant and table, the frame's message id and the record's queue key
// (mq.Record.IdempotencyKey).
type MarkedFrame struct {
	Tenant, Table, Frame, QueueKey string
}

// ResolveFrames tells, for each marked claim, whether its frame is stored holding its record:
// the frame id to record in its place ("<id>@<position>"), or "" when the stream does not show
// it (not stored, stored without the record, or beyond what the stream can tell: another epoch,
// the frame itself trimmed). It reads the headers of each partition stream from the lowest bound the
// frames carry (or the first retained frame, when that bound was trimmed) to the stream's last
// message, so it must be called only when no frame marked so
// can still be stored: by the process that published them, after a restart, before it publishes
// (the embedded queue).
func (q *Queue) ResolveFrames(ctx context.Context, marks []MarkedFrame) ([]string, error) {
	out := make([]string, len(marks))
	byPartition := map[int][]int{}
	for i, m := range marks {
		if checkName(m.Tenant, m.Table) != nil {
			continue
		}
		p := q.names.Partition(m.Tenant, m.Table)
		byPartition[p] = append(byPartition[p], i)
	}
	for p, idx := range byPartition {
		if err := q.resolvePartition(ctx, p, marks, idx, out); err != nil {
			return nil, fmt.Errorf("resolve marked frames of partition %d: %w", p, err)
		}
	}
	return out, nil
}

func (q *Queue) resolvePartition(ctx context.Context, p int, marks []MarkedFrame, idx []int, out []string) error {
	stream := q.names.Stream(p)
	info, err := q.streamInfo(ctx, stream)
	if err != nil {
		return err
	}
	epoch, st := q.epoch(info), info.State
	want := map[string][]int{} // frame id -> marks
	start := uint64(0)
	for _, i := range idx {
		e, after, ok := parseFrameID(marks[i].Frame)
		if !ok || e != epoch {
			continue // another history: cannot tell
		}
		want[marks[i].Frame] = append(want[marks[i].Frame], i)
		// The frame is stored after its bound, if at all: read from there, or from the first
		// frame retained when history below it was trimmed (found, the id proves the frame is
		// stored; not found, the mark is left alone as for any frame not found).
		from := max(after+1, st.FirstSeq)
		if start == 0 || from < start {
			start = from
		}
	}
	if len(want) == 0 || st.Msgs == 0 || start > st.LastSeq {
		return nil
	}
	found, err := q.scanMsgIDs(ctx, stream, start, st.LastSeq, want)
	if err != nil {
		return err
	}
	for id, seq := range found {
		msg, err := q.storedMsgIn(ctx, stream, seq)
		if err != nil {
			return err
		}
		if msg.Header.Get(hdrFence) != "" {
			continue
		}
		for _, i := range want[id] {
			m := marks[i]
			if msg.Subject != q.names.Subject(m.Tenant, m.Table) {
				continue
			}
			recs, err := decodeFrame(msg.Data, m.Tenant, m.Table, seq)
			if err != nil {
				return err
			}
			for _, rec := range recs {
				if rec.IdempotencyKey == m.QueueKey {
					out[i] = id + "@" + rec.Position.String()
					break
				}
			}
		}
	}
	return nil
}

// scanMsgIDs reads the headers of stream from first to last and returns the sequence of each
// message whose message id is one of want's.
func (q *Queue) scanMsgIDs(ctx context.Context, stream string, first, last uint64, want map[string][]int) (map[string]uint64, error) {
	found := map[string]uint64{}
	err := q.scanHeaders(ctx, stream, first, last, func(seq uint64, h nats.Header) bool {
		if id := h.Get(jetstream.MsgIDHeader); id != "" {
			if _, ok := want[id]; ok {
				if _, dup := found[id]; !dup {
					found[id] = seq
				}
			}
		}
		return len(found) < len(want)
	})
	if err != nil {
		return nil, err
	}
	return found, nil
}

// scanHeaders reads the headers of stream's messages from first on, in order, with a headers-only
// ordered consumer, and calls fn with each one's sequence and headers until fn returns false, it
// has read last, or the stream has no more.
func (q *Queue) scanHeaders(ctx context.Context, stream string, first, last uint64, fn func(seq uint64, h nats.Header) bool) error {
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: first, HeadersOnly: true}
	var cons jetstream.Consumer
	err := q.rpc(ctx, func(ctx context.Context) error {
		var err error
		cons, err = q.js.OrderedConsumer(ctx, stream, cfg)
		return err
	})
	if err != nil {
		return fmt.Errorf("scan consumer on stream %s: %w", stream, err)
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
			return translate(err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return err
		}
		if !fn(md.Sequence.Stream, msg.Headers()) || md.Sequence.Stream >= last || md.NumPending == 0 {
			return nil
		}
	}
}

// storedMsgIn reads the message at seq of stream.
func (q *Queue) storedMsgIn(ctx context.Context, stream string, seq uint64) (*jetstream.RawStreamMsg, error) {
	var msg *jetstream.RawStreamMsg
	err := q.rpc(ctx, func(ctx context.Context) error {
		s, err := q.js.Stream(ctx, stream)
		if err != nil {
			return err
		}
		msg, err = s.GetMsg(ctx, seq)
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		// Trimmed already: whether it held a record cannot be told.
		return nil, fmt.Errorf("%w: message %d of %s that took an unresolved frame id is no longer stored", mq.ErrUnavailable, seq, stream)
	}
	return msg, err
}

// ResolveFrames implements ResolveFrames on the handle's queue.
func (h *Handle) ResolveFrames(ctx context.Context, marks []MarkedFrame) ([]string, error) {
	q, err := h.Queue()
	if err != nil {
		return nil, err
	}
	return q.ResolveFrames(ctx, marks)
}
