package jsmq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// Dead-letter message headers. The body is a one-record frame, so the
// record keeps its own headers, idempotency key and accept time.
const (
	hdrTenant       = "Wh-Tenant"
	hdrTable        = "Wh-Table"
	hdrCode         = "Wh-Error-Code"
	hdrMessage      = "Wh-Error-Message"
	hdrAttempts     = "Wh-Attempts"
	hdrFirstFailure = "Wh-First-Failure"
	hdrLastFailure  = "Wh-Last-Failure"
	hdrPosition     = "Wh-Position"
	// An undecodable message is kept as it was stored: its body is the
	// original body, and these headers say where it came from. An entry
	// without hdrRawSubject is a one-record frame (every entry written
	// before undecodable messages were dead-lettered is).
	hdrRawSubject   = "Wh-Raw-Subject"
	hdrRawPartition = "Wh-Raw-Partition"
	hdrRawSize      = "Wh-Raw-Size"
	hdrRawHeader    = "Wh-Raw-Header-"
)

// dlq implements mq.DeadLetters on the Queue's dead-letter stream.
type dlq Queue

var _ mq.DeadLetters = (*dlq)(nil)

// deadLetter stores one record in the dead-letter stream. Its message id
// is the record's position, so retrying a partly failed DeadLetter never
// stores an entry twice within the duplicate window.
func (q *Queue) deadLetter(ctx context.Context, r *mq.Record, reason mq.Reason) error {
	msg := nats.NewMsg(q.names.DLQSubject(r.Tenant, r.Table))
	msg.Data = appendFrame(nil, []*mq.Record{r})
	h := msg.Header
	h.Set(hdrTenant, r.Tenant)
	h.Set(hdrTable, r.Table)
	h.Set(hdrCode, reason.Code)
	h.Set(hdrMessage, reason.Message)
	h.Set(hdrAttempts, strconv.Itoa(reason.Attempts))
	h.Set(hdrFirstFailure, reason.FirstFailure.UTC().Format(time.RFC3339Nano))
	h.Set(hdrLastFailure, reason.LastFailure.UTC().Format(time.RFC3339Nano))
	h.Set(hdrPosition, r.Position.String())
	h.Set(jetstream.MsgIDHeader, q.names.Subject(r.Tenant, r.Table)+"@"+r.Position.String())
	_, err := q.js.PublishMsg(ctx, msg)
	return err
}

// undecodable dead-letters a message of partition p that is not a frame
// (cause says why) with its raw bytes, subject and sequence, then
// acknowledges it, counts it and logs it once. When either step fails the
// message is handed back for redelivery, so it is never dropped unseen.
func (q *Queue) undecodable(ctx context.Context, p int, msg jetstream.Msg, cause error) {
	var seq uint64
	if md, err := msg.Metadata(); err == nil {
		seq = md.Sequence.Stream
	}
	var id uint64
	err := q.rpc(context.WithoutCancel(ctx), func(ctx context.Context) error {
		var err error
		if id, err = q.deadLetterRaw(ctx, p, msg, seq, cause); err != nil {
			return err
		}
		return msg.DoubleAck(ctx)
	})
	if err != nil {
		_ = msg.NakWithDelay(time.Second)
		q.log.Warn("mq: dead-lettering an undecodable message failed; it is redelivered", "partition", p, "seq", seq, "error", err)
		return
	}
	q.opts.Metrics.observeUndecodable(p)
	q.log.Error("mq: undecodable message dead-lettered", "partition", p, "seq", seq,
		"code", mq.ReasonUndecodable, "cause", cause.Error(), "bytes", len(msg.Data()), "dlq_id", id)
}

// deadLetterRaw stores msg as it is in the dead-letter stream, under its
// table's dead-letter subject when its subject names one, and returns the
// entry's id. Its message id is the stream and sequence, so a retry never
// stores it twice within the duplicate window. A body that would not fit
// the server's max_payload next to the headers is cut, and Wh-Raw-Size
// keeps its size.
func (q *Queue) deadLetterRaw(ctx context.Context, p int, src jetstream.Msg, seq uint64, cause error) (uint64, error) {
	subj := q.names.DLQUndecodableSubject(p)
	tenant, table, perr := q.names.ParseSubject(src.Subject())
	if perr == nil {
		subj = q.names.DLQSubject(tenant, table)
	}
	msg := nats.NewMsg(subj)
	data := src.Data()
	if limit := int(q.nc.MaxPayload()) - 8192; limit > 0 && len(data) > limit {
		data = data[:limit]
	}
	msg.Data = data
	h := msg.Header
	for k, v := range src.Headers() {
		if len(v) > 0 && len(k)+len(v[0]) < 1024 {
			h.Set(hdrRawHeader+k, v[0])
		}
	}
	if perr == nil {
		h.Set(hdrTenant, tenant)
		h.Set(hdrTable, table)
	}
	now := q.now().UTC().Format(time.RFC3339Nano)
	h.Set(hdrCode, mq.ReasonUndecodable)
	h.Set(hdrMessage, cause.Error())
	h.Set(hdrAttempts, "1")
	h.Set(hdrFirstFailure, now)
	h.Set(hdrLastFailure, now)
	h.Set(hdrPosition, mq.Position{Seq: seq}.String())
	h.Set(hdrRawSubject, src.Subject())
	h.Set(hdrRawPartition, strconv.Itoa(p))
	h.Set(hdrRawSize, strconv.Itoa(len(src.Data())))
	h.Set(jetstream.MsgIDHeader, "raw@"+q.names.Stream(p)+":"+strconv.FormatUint(seq, 10))
	ack, err := q.js.PublishMsg(ctx, msg)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

func (d *dlq) q() *Queue { return (*Queue)(d) }

func (d *dlq) stream(ctx context.Context) (jetstream.Stream, error) {
	q := d.q()
	if err := q.checkConn(); err != nil {
		return nil, err
	}
	var s jetstream.Stream
	err := q.rpc(ctx, func(ctx context.Context) error {
		var err error
		s, err = q.js.Stream(ctx, q.names.DLQStream())
		return err
	})
	return s, err
}

func (d *dlq) entry(raw *jetstream.RawStreamMsg) (mq.DeadEntry, error) {
	q := d.q()
	tenant, table, err := q.names.ParseSubject(raw.Subject)
	if err != nil || !strings.HasPrefix(raw.Subject, q.names.Prefix+".dlq.") {
		return mq.DeadEntry{}, fmt.Errorf("%w: dead-letter entry %d", mq.ErrNotFound, raw.Sequence)
	}
	pos, _ := mq.ParsePosition(raw.Header.Get(hdrPosition))
	attempts, _ := strconv.Atoi(raw.Header.Get(hdrAttempts))
	first, _ := time.Parse(time.RFC3339Nano, raw.Header.Get(hdrFirstFailure))
	last, _ := time.Parse(time.RFC3339Nano, raw.Header.Get(hdrLastFailure))
	reason := mq.Reason{
		Code: raw.Header.Get(hdrCode), Message: raw.Header.Get(hdrMessage),
		Attempts: attempts, FirstFailure: first, LastFailure: last,
	}
	if rs := raw.Header.Get(hdrRawSubject); rs != "" {
		part, _ := strconv.Atoi(raw.Header.Get(hdrRawPartition))
		m := &mq.RawMessage{Subject: rs, Partition: part, Seq: pos.Seq, Data: raw.Data}
		for k, v := range raw.Header {
			if name, ok := strings.CutPrefix(k, hdrRawHeader); ok && len(v) > 0 {
				if m.Headers == nil {
					m.Headers = map[string]string{}
				}
				m.Headers[name] = v[0]
			}
		}
		rec := mq.Record{Tenant: raw.Header.Get(hdrTenant), Table: raw.Header.Get(hdrTable), Position: pos}
		return mq.DeadEntry{ID: raw.Sequence, Record: rec, Reason: reason, DeadAt: raw.Time, Raw: m}, nil
	}
	recs, err := decodeFrame(raw.Data, tenant, table, pos.Seq)
	if err != nil || len(recs) != 1 {
		return mq.DeadEntry{}, fmt.Errorf("dead-letter entry %d: %w", raw.Sequence, errBadFrame)
	}
	rec := recs[0]
	rec.Position = pos
	return mq.DeadEntry{ID: raw.Sequence, Record: rec, Reason: reason, DeadAt: raw.Time}, nil
}

// List implements mq.DeadLetters.
func (d *dlq) List(ctx context.Context, tenant, table string, after uint64, limit int) ([]mq.DeadEntry, error) {
	if err := checkName(tenant, table); err != nil {
		return nil, err
	}
	s, err := d.stream(ctx)
	if err != nil {
		return nil, err
	}
	subj := d.q().names.DLQSubject(tenant, table)
	var out []mq.DeadEntry
	seq := after + 1
	for len(out) < limit {
		var raw *jetstream.RawStreamMsg
		err := d.q().rpc(ctx, func(ctx context.Context) error {
			var err error
			raw, err = s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subj))
			return err
		})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return out, err
		}
		e, err := d.entry(raw)
		if err != nil {
			return out, err
		}
		out = append(out, e)
		seq = raw.Sequence + 1
	}
	return out, nil
}

// Counts implements mq.DeadLetters.
func (d *dlq) Counts(ctx context.Context, tenant string) (map[mq.TableKey]uint64, error) {
	q := d.q()
	s, err := d.stream(ctx)
	if err != nil {
		return nil, err
	}
	filter := q.names.DLQSubjects()
	if tenant != "" {
		filter = q.names.Prefix + ".dlq." + EscapeToken(tenant) + ".*"
	}
	var info *jetstream.StreamInfo
	err = q.rpc(ctx, func(ctx context.Context) error {
		var err error
		info, err = s.Info(ctx, jetstream.WithSubjectFilter(filter))
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[mq.TableKey]uint64, len(info.State.Subjects))
	for subj, n := range info.State.Subjects {
		t, tb, err := q.names.ParseSubject(subj)
		if err != nil {
			continue
		}
		out[mq.TableKey{Tenant: t, Table: tb}] += n
	}
	return out, nil
}

// Get implements mq.DeadLetters.
func (d *dlq) Get(ctx context.Context, id uint64) (mq.DeadEntry, error) {
	s, err := d.stream(ctx)
	if err != nil {
		return mq.DeadEntry{}, err
	}
	var raw *jetstream.RawStreamMsg
	err = d.q().rpc(ctx, func(ctx context.Context) error {
		var err error
		raw, err = s.GetMsg(ctx, id)
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return mq.DeadEntry{}, fmt.Errorf("%w: dead-letter entry %d", mq.ErrNotFound, id)
	}
	if err != nil {
		return mq.DeadEntry{}, err
	}
	return d.entry(raw)
}

// Replay implements mq.DeadLetters. The idempotency key is dropped on
// republish: the original was stored and must not make the replay a
// duplicate.
//
// Replay is idempotent across a crash. Each entry is moved in steps that can each be repeated:
//
//  1. a marker is written to the journal bucket (key "replay.<entry>", value: the partition
//     stream's last sequence before the publish);
//  2. the record is published as a frame of its own with Nats-Msg-Id "dlq-replay:<entry>" and a
//     Wh-Replay-Of header naming the entry;
//  3. the entry is deleted from the dead-letter stream;
//  4. the marker is deleted.
//
// A replay that finds an entry with a marker (a crash after step 1) first looks for the frame of
// step 2 among the table's frames stored after the marker's sequence, and publishes only when it
// is not there. The message id alone would cover a repeat within the stream's duplicate window
// (mq.embedded duplicate_window, 2 min); the marker covers it beyond, for as long as the
// republished frame is retained (the sweeper trims history only below the ack floor, and past the
// history window or, while the stream holds more than half its byte bound, past twice
// mq.ack_wait and, with idempotency keys on, before the resolve window's first frame with a
// message id, which a replay frame is: docs/adr/0019). <entry> is the entry's sequence and store time, so a recreated dead-letter
// stream never matches an old marker.
func (d *dlq) Replay(ctx context.Context, tenant, table string, limit int) (int, error) {
	var entries []mq.DeadEntry
	// Raw (undecodable) entries stay where they are: page past them.
	for after := uint64(0); len(entries) < limit; {
		page, err := d.List(ctx, tenant, table, after, limit)
		if err != nil {
			return 0, err
		}
		for _, e := range page {
			if e.Raw == nil && len(entries) < limit {
				entries = append(entries, e)
			}
		}
		if len(page) < limit {
			break
		}
		after = page[len(page)-1].ID
	}
	s, err := d.stream(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if err := d.replayOne(ctx, e); err != nil {
			return n, err
		}
		err := d.q().rpc(ctx, func(ctx context.Context) error { return s.DeleteMsg(ctx, e.ID) })
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return n, err
		}
		if err := d.forgetReplay(ctx, e); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// hdrReplayOf names, on a republished frame, the dead-letter entry it replays.
const hdrReplayOf = "Wh-Replay-Of"

// replayID identifies a dead-letter entry across dead-letter streams.
func replayID(e mq.DeadEntry) string {
	return strconv.FormatUint(e.ID, 10) + "-" + strconv.FormatInt(e.DeadAt.UnixNano(), 10)
}

// replayKey is the journal key of e's replay marker (outside the plans' "<partition>." keys).
func replayKey(e mq.DeadEntry) string { return "replay." + replayID(e) }

// replayOne republishes e's record unless a previous, interrupted replay already did.
func (d *dlq) replayOne(ctx context.Context, e mq.DeadEntry) error {
	q := d.q()
	kv, err := q.journal(ctx)
	if err != nil {
		return err
	}
	rec := e.Record
	rec.IdempotencyKey = ""
	rec.Position = mq.Position{}
	p := q.names.Partition(rec.Tenant, rec.Table)
	var marker jetstream.KeyValueEntry
	err = q.rpc(ctx, func(ctx context.Context) error {
		var err error
		marker, err = kv.Get(ctx, replayKey(e))
		return err
	})
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		_, last, err := q.floorAndLast(ctx, p)
		if err != nil {
			return err
		}
		err = q.rpc(ctx, func(ctx context.Context) error {
			_, err := kv.Put(ctx, replayKey(e), strconv.AppendUint(nil, last, 10))
			return err
		})
		if err != nil {
			return fmt.Errorf("record replay of dead-letter entry %d: %w", e.ID, err)
		}
	case err != nil:
		return fmt.Errorf("replay marker of dead-letter entry %d: %w", e.ID, err)
	default:
		since, _ := strconv.ParseUint(string(marker.Value()), 10, 64)
		done, err := d.replayed(ctx, p, q.names.Subject(rec.Tenant, rec.Table), since, replayID(e))
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
	if err := d.publishReplay(ctx, &rec, replayID(e)); err != nil {
		return err
	}
	if f := q.opts.AfterReplayPublish; f != nil {
		return f(e.ID)
	}
	return nil
}

// publishReplay stores rec as a frame of its own carrying the replay's message id and header.
func (d *dlq) publishReplay(ctx context.Context, rec *mq.Record, id string) error {
	q := d.q()
	if rec.AcceptedAt.IsZero() {
		rec.AcceptedAt = q.now()
	}
	if size := recordSize(rec); size > q.maxRecord {
		return fmt.Errorf("%w: %d bytes, at most %d", mq.ErrTooLarge, size, q.maxRecord)
	}
	charge := int64(len(rec.Payload))
	if err := q.reserve(ctx, rec.Tenant, charge); err != nil {
		return err
	}
	msg := q.frameMsg(q.names.Subject(rec.Tenant, rec.Table), []*mq.Record{rec})
	msg.Header.Set(jetstream.MsgIDHeader, "dlq-replay:"+id)
	msg.Header.Set(hdrReplayOf, id)
	ack, err := q.publishMsg(ctx, msg)
	if err != nil || ack.Duplicate {
		q.release(rec.Tenant, charge)
	}
	return err
}

// replayed reports whether a frame replaying id is among subject's frames after sequence since.
func (d *dlq) replayed(ctx context.Context, p int, subject string, since uint64, id string) (bool, error) {
	q := d.q()
	s, err := q.stream(ctx, p)
	if err != nil {
		return false, err
	}
	for seq := since + 1; ; {
		var raw *jetstream.RawStreamMsg
		err := q.rpc(ctx, func(ctx context.Context) error {
			var err error
			raw, err = s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
			return err
		})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if raw.Header.Get(hdrReplayOf) == id {
			return true, nil
		}
		seq = raw.Sequence + 1
	}
}

// forgetReplay deletes e's replay marker once the entry is gone.
func (d *dlq) forgetReplay(ctx context.Context, e mq.DeadEntry) error {
	q := d.q()
	kv, err := q.journal(ctx)
	if err != nil {
		return err
	}
	err = q.rpc(ctx, func(ctx context.Context) error { return kv.Delete(ctx, replayKey(e)) })
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("forget replay marker of dead-letter entry %d: %w", e.ID, err)
	}
	return nil
}

// Purge implements mq.DeadLetters.
func (d *dlq) Purge(ctx context.Context, tenant, table string) (uint64, error) {
	if err := checkName(tenant, table); err != nil {
		return 0, err
	}
	counts, err := d.Counts(ctx, tenant)
	if err != nil {
		return 0, err
	}
	s, err := d.stream(ctx)
	if err != nil {
		return 0, err
	}
	subj := d.q().names.DLQSubject(tenant, table)
	err = d.q().rpc(ctx, func(ctx context.Context) error { return s.Purge(ctx, jetstream.WithPurgeSubject(subj)) })
	if err != nil {
		return 0, err
	}
	return counts[mq.TableKey{Tenant: tenant, Table: table}], nil
}

// Expire implements mq.DeadLetterExpirer: it removes every dead-letter entry stored before
// olderThan, oldest first, and returns how many it removed.
func (d *dlq) Expire(ctx context.Context, olderThan time.Time) (uint64, error) {
	s, err := d.stream(ctx)
	if err != nil {
		return 0, err
	}
	q := d.q()
	var removed uint64
	err = q.rpc(ctx, func(ctx context.Context) error {
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		if info.State.Msgs == 0 {
			return nil
		}
		lo, hi := info.State.FirstSeq, info.State.LastSeq+1
		for lo < hi {
			mid := lo + (hi-lo)/2
			raw, err := s.GetMsg(ctx, mid, jetstream.WithGetMsgSubject(q.names.DLQSubjects()))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				hi = mid
				continue
			}
			if err != nil {
				return err
			}
			if raw.Time.Before(olderThan) {
				lo = raw.Sequence + 1
			} else {
				hi = mid
			}
		}
		if lo <= info.State.FirstSeq {
			return nil
		}
		if err := s.Purge(ctx, jetstream.WithPurgeSequence(lo)); err != nil {
			return err
		}
		after, err := s.Info(ctx)
		if err != nil {
			return err
		}
		removed = info.State.Msgs - after.State.Msgs
		return nil
	})
	return removed, err
}
