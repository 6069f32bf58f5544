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
	recs, err := decodeFrame(raw.Data, tenant, table, pos.Seq)
	if err != nil || len(recs) != 1 {
		return mq.DeadEntry{}, fmt.Errorf("dead-letter entry %d: %w", raw.Sequence, errBadFrame)
	}
	rec := recs[0]
	rec.Position = pos
	attempts, _ := strconv.Atoi(raw.Header.Get(hdrAttempts))
	first, _ := time.Parse(time.RFC3339Nano, raw.Header.Get(hdrFirstFailure))
	last, _ := time.Parse(time.RFC3339Nano, raw.Header.Get(hdrLastFailure))
	return mq.DeadEntry{
		ID:     raw.Sequence,
		Record: rec,
		Reason: mq.Reason{
			Code: raw.Header.Get(hdrCode), Message: raw.Header.Get(hdrMessage),
			Attempts: attempts, FirstFailure: first, LastFailure: last,
		},
		DeadAt: raw.Time,
	}, nil
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
func (d *dlq) Replay(ctx context.Context, tenant, table string, limit int) (int, error) {
	entries, err := d.List(ctx, tenant, table, 0, limit)
	if err != nil {
		return 0, err
	}
	s, err := d.stream(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		rec := e.Record
		rec.IdempotencyKey = ""
		rec.Position = mq.Position{}
		if _, err := d.q().Publish(ctx, rec); err != nil {
			return n, err
		}
		err := d.q().rpc(ctx, func(ctx context.Context) error { return s.DeleteMsg(ctx, e.ID) })
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return n, err
		}
		n++
	}
	return n, nil
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
