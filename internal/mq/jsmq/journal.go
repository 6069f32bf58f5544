package jsmq

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/binread"
	"github.com/wavehouse/wavehouse/internal/mq"
)

// The batch-plan journal is the KV bucket Names.JournalBucket, one key per plan:
// "<partition>.<table hash>.<plan id>". A plan costs one synchronous KV write before the insert
// (Plan) and one after it (MarkInserted), and a fire-and-forget delete once its frames are
// acknowledged durably (Forget). Frames are not indexed one by one in the bucket (each KV write
// is one fsync under sync: always); each process indexes the bucket in memory instead
// (journalindex.go), so Lookup costs one bucket status request.

var _ mq.Journal = (*Queue)(nil)

// planMagic starts every encoded plan: version 1 (planMagicV1) had no claimer, version 2 adds
// the claiming Queue's instance after the claim time. Both decode.
const (
	planMagicV1 = 0xB1
	planMagic   = 0xB2
)

// maxFailedMessage bounds a stored dead-letter message of a failed record.
const maxFailedMessage = 512

// journalEntry is a stored plan plus when it was first planned and who claims it.
type journalEntry struct {
	plan      mq.BatchPlan
	plannedAt int64
	claimer   string
}

func tableHash(tenant, table string) string {
	h := fnv.New64a()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(table))
	return strconv.FormatUint(h.Sum64(), 16)
}

func (q *Queue) planKey(p mq.BatchPlan) (string, error) {
	if err := checkName(p.Tenant, p.Table); err != nil {
		return "", err
	}
	if len(p.Frames) == 0 || p.ID == "" {
		return "", fmt.Errorf("%w: plan without id or frames", mq.ErrInvalid)
	}
	part := p.Frames[0].Partition
	if err := q.checkPartition(part); err != nil {
		return "", err
	}
	return strconv.Itoa(part) + "." + tableHash(p.Tenant, p.Table) + "." + p.ID, nil
}

func encodePlan(e journalEntry) []byte {
	p := e.plan
	b := []byte{planMagic, 0}
	if p.Inserted {
		b[1] = 1
	}
	var claim int64
	if !p.ClaimedUntil.IsZero() {
		claim = p.ClaimedUntil.UnixNano()
	}
	b = binary.AppendVarint(b, claim)
	b = appendString(b, e.claimer)
	b = binary.AppendVarint(b, e.plannedAt)
	b = appendString(b, p.Tenant)
	b = appendString(b, p.Table)
	b = binary.AppendUvarint(b, uint64(p.Frames[0].Partition))
	b = binary.AppendUvarint(b, uint64(len(p.Frames)))
	var prev uint64
	for _, f := range p.Frames {
		b = binary.AppendVarint(b, int64(f.Seq-prev))
		prev = f.Seq
	}
	b = binary.AppendUvarint(b, uint64(len(p.Failed)))
	for _, f := range p.Failed {
		msg := f.Message
		if len(msg) > maxFailedMessage {
			msg = msg[:maxFailedMessage]
		}
		b = binary.AppendUvarint(b, uint64(f.Frame))
		b = binary.AppendUvarint(b, uint64(f.Record))
		b = appendString(b, f.Code)
		b = appendString(b, msg)
	}
	return b
}

var errBadPlan = errors.New("mq: malformed journal entry")

func decodePlan(id string, data []byte) (journalEntry, error) {
	if len(data) < 2 || data[0] != planMagic && data[0] != planMagicV1 {
		return journalEntry{}, errBadPlan
	}
	var e journalEntry
	p := &e.plan
	p.ID = id
	p.Inserted = data[1]&1 != 0
	d := binread.Reader{B: data[2:]}
	if claim := d.Varint(); claim != 0 {
		p.ClaimedUntil = time.Unix(0, claim)
	}
	if data[0] == planMagic {
		e.claimer = string(d.Bytes())
	}
	e.plannedAt = d.Varint()
	p.Tenant = string(d.Bytes())
	p.Table = string(d.Bytes())
	part := int(d.Uvarint())
	n := d.Uvarint()
	if d.Err != nil || n > uint64(len(data)) {
		return journalEntry{}, errBadPlan
	}
	p.Frames = make([]mq.FrameRef, n)
	var seq uint64
	for i := range p.Frames {
		seq += uint64(d.Varint())
		p.Frames[i] = mq.FrameRef{Partition: part, Seq: seq}
	}
	nf := d.Uvarint()
	if d.Err != nil || nf > uint64(len(data)) {
		return journalEntry{}, errBadPlan
	}
	for range nf {
		f := mq.FailedRecord{Frame: int(d.Uvarint()), Record: int(d.Uvarint())}
		f.Code = string(d.Bytes())
		f.Message = string(d.Bytes())
		p.Failed = append(p.Failed, f)
	}
	if d.Err != nil {
		return journalEntry{}, errBadPlan
	}
	return e, nil
}

// journal returns the journal bucket, opening it on first use.
func (q *Queue) journal(ctx context.Context) (jetstream.KeyValue, error) {
	q.mu.Lock()
	kv := q.journalKV
	q.mu.Unlock()
	if kv != nil {
		return kv, nil
	}
	err := q.rpc(ctx, func(ctx context.Context) error {
		var err error
		kv, err = q.js.KeyValue(ctx, q.names.JournalBucket())
		return err
	})
	if err != nil {
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, fmt.Errorf("%w: key-value bucket %s is missing: %w", mq.ErrTopology, q.names.JournalBucket(), err)
		}
		return nil, err
	}
	q.mu.Lock()
	q.journalKV = kv
	q.mu.Unlock()
	return kv, nil
}

// Plan implements mq.Journal.
func (q *Queue) Plan(ctx context.Context, p mq.BatchPlan) error {
	key, err := q.planKey(p)
	if err != nil {
		return err
	}
	if err := q.checkConn(); err != nil {
		return err
	}
	kv, err := q.journal(ctx)
	if err != nil {
		return err
	}
	p.Inserted, p.Failed, p.ClaimedUntil = false, nil, time.Time{}
	val := encodePlan(journalEntry{plan: p, plannedAt: q.now().UnixNano()})
	return q.rpc(ctx, func(ctx context.Context) error {
		_, err := kv.Put(ctx, key, val)
		return err
	})
}

// MarkInserted implements mq.Journal.
func (q *Queue) MarkInserted(ctx context.Context, p mq.BatchPlan, failed []mq.FailedRecord) error {
	p.Inserted, p.Failed, p.ClaimedUntil = true, failed, time.Time{}
	return q.putPlan(ctx, p)
}

// Release implements mq.Journal.
func (q *Queue) Release(ctx context.Context, p mq.BatchPlan) error {
	if p.Inserted {
		return nil
	}
	p.ClaimedUntil = time.Time{}
	return q.putPlan(ctx, p)
}

func (q *Queue) putPlan(ctx context.Context, p mq.BatchPlan) error {
	key, err := q.planKey(p)
	if err != nil {
		return err
	}
	if err := q.checkConn(); err != nil {
		return err
	}
	kv, err := q.journal(ctx)
	if err != nil {
		return err
	}
	val := encodePlan(journalEntry{plan: p, plannedAt: q.now().UnixNano()})
	return q.rpc(ctx, func(ctx context.Context) error {
		_, err := kv.Put(ctx, key, val)
		return err
	})
}

// Claim implements mq.Journal with a compare-and-set on the entry's revision.
func (q *Queue) Claim(ctx context.Context, p mq.BatchPlan, lease time.Duration) (mq.BatchPlan, bool, error) {
	key, err := q.planKey(p)
	if err != nil {
		return p, false, err
	}
	if err := q.checkConn(); err != nil {
		return p, false, err
	}
	kv, err := q.journal(ctx)
	if err != nil {
		return p, false, err
	}
	var entry jetstream.KeyValueEntry
	err = q.rpc(ctx, func(ctx context.Context) error {
		var err error
		entry, err = kv.Get(ctx, key)
		return err
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return p, false, fmt.Errorf("%w: plan %s", mq.ErrNotFound, p.ID)
	}
	if err != nil {
		return p, false, err
	}
	cur, err := decodePlan(p.ID, entry.Value())
	if err != nil {
		return p, false, err
	}
	cur.plan.Revision = entry.Revision()
	now := q.now()
	deadClaim := q.opts.SoleConsumer && cur.claimer != q.instance
	if cur.plan.Inserted || cur.plan.ClaimedUntil.After(now) && !deadClaim {
		return cur.plan, false, nil
	}
	cur.plan.ClaimedUntil, cur.claimer = now.Add(lease), q.instance
	var rev uint64
	err = q.rpc(ctx, func(ctx context.Context) error {
		var err error
		rev, err = kv.Update(ctx, key, encodePlan(cur), entry.Revision())
		return err
	})
	var apiErr *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyExists) || errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return cur.plan, false, nil // someone else updated it first
	}
	if err != nil {
		return p, false, err
	}
	cur.plan.Revision = rev
	return cur.plan, true, nil
}

// Forget implements mq.Journal: a delete marker published without waiting for its ack.
func (q *Queue) Forget(_ context.Context, p mq.BatchPlan) error {
	key, err := q.planKey(p)
	if err != nil {
		return err
	}
	if err := q.checkConn(); err != nil {
		return err
	}
	msg := nats.NewMsg("$KV." + q.names.JournalBucket() + "." + key)
	msg.Header.Set("KV-Operation", "DEL")
	return translate(q.nc.PublishMsg(msg))
}

// Lookup implements mq.Journal from the journal index (journalindex.go): it waits until the
// index reflects every plan recorded before the call, then answers from memory. since is not
// needed by the index and is ignored.
func (q *Queue) Lookup(ctx context.Context, tenant, table string, frames []mq.FrameRef, _ time.Time) (map[mq.FrameRef]mq.BatchPlan, error) {
	if len(frames) == 0 {
		return map[mq.FrameRef]mq.BatchPlan{}, nil
	}
	if err := checkName(tenant, table); err != nil {
		return nil, err
	}
	if err := q.checkPartition(frames[0].Partition); err != nil {
		return nil, err
	}
	if err := q.checkConn(); err != nil {
		return nil, err
	}
	x, kv, err := q.journalIndexFor(ctx)
	if err != nil {
		return nil, err
	}
	last, err := q.journalLastSeq(ctx, kv)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, q.opts.PublishTimeout)
	defer cancel()
	if err := x.wait(wctx, last); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: journal index behind the bucket (sequence %d)", mq.ErrUnavailable, last)
	}
	return x.find(tenant, table, frames), nil
}

// GetFrame implements mq.Journal with a direct get of the frame's stream sequence.
func (q *Queue) GetFrame(ctx context.Context, ref mq.FrameRef) ([]mq.Record, error) {
	if err := q.checkPartition(ref.Partition); err != nil {
		return nil, err
	}
	if err := q.checkConn(); err != nil {
		return nil, err
	}
	var raw *jetstream.RawStreamMsg
	err := q.rpc(ctx, func(ctx context.Context) error {
		s, err := q.stream(ctx, ref.Partition)
		if err != nil {
			return err
		}
		raw, err = s.GetMsg(ctx, ref.Seq)
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("%w: frame %d of partition %d", mq.ErrNotFound, ref.Seq, ref.Partition)
	}
	if err != nil {
		return nil, err
	}
	tenant, table, err := q.names.ParseSubject(raw.Subject)
	if err != nil {
		return nil, err
	}
	return decodeFrame(raw.Data, tenant, table, ref.Seq)
}

// stream returns partition p's stream handle, cached after the first lookup.
func (q *Queue) stream(ctx context.Context, p int) (jetstream.Stream, error) {
	q.mu.Lock()
	s := q.streams[p]
	q.mu.Unlock()
	if s != nil {
		return s, nil
	}
	s, err := q.js.Stream(ctx, q.names.Stream(p))
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	q.streams[p] = s
	q.mu.Unlock()
	return s, nil
}

var _ mq.Journal = (*Handle)(nil)

// Plan implements mq.Journal.
func (h *Handle) Plan(ctx context.Context, p mq.BatchPlan) error {
	q, err := h.Queue()
	if err != nil {
		return err
	}
	return q.Plan(ctx, p)
}

// Lookup implements mq.Journal.
func (h *Handle) Lookup(ctx context.Context, tenant, table string, frames []mq.FrameRef, since time.Time) (map[mq.FrameRef]mq.BatchPlan, error) {
	q, err := h.Queue()
	if err != nil {
		return nil, err
	}
	return q.Lookup(ctx, tenant, table, frames, since)
}

// Claim implements mq.Journal.
func (h *Handle) Claim(ctx context.Context, p mq.BatchPlan, lease time.Duration) (mq.BatchPlan, bool, error) {
	q, err := h.Queue()
	if err != nil {
		return p, false, err
	}
	return q.Claim(ctx, p, lease)
}

// Release implements mq.Journal.
func (h *Handle) Release(ctx context.Context, p mq.BatchPlan) error {
	q, err := h.Queue()
	if err != nil {
		return err
	}
	return q.Release(ctx, p)
}

// MarkInserted implements mq.Journal.
func (h *Handle) MarkInserted(ctx context.Context, p mq.BatchPlan, failed []mq.FailedRecord) error {
	q, err := h.Queue()
	if err != nil {
		return err
	}
	return q.MarkInserted(ctx, p, failed)
}

// Forget implements mq.Journal.
func (h *Handle) Forget(ctx context.Context, p mq.BatchPlan) error {
	q, err := h.Queue()
	if err != nil {
		return err
	}
	return q.Forget(ctx, p)
}

// GetFrame implements mq.Journal.
func (h *Handle) GetFrame(ctx context.Context, ref mq.FrameRef) ([]mq.Record, error) {
	q, err := h.Queue()
	if err != nil {
		return nil, err
	}
	return q.GetFrame(ctx, ref)
}

var _ mq.JournalCompactor = (*Queue)(nil)

// CompactJournal implements mq.JournalCompactor. The plans still in the bucket are few (each is
// forgotten once its frames are acknowledged), so it reads every one: a plan whose frames are all
// at or below their partition's ingest ack floor will never be looked up again (only redelivered
// frames are, and an acknowledged frame is never redelivered) and is purged. Delete markers older
// than olderThan are then purged with the bucket's own PurgeDeletes.
func (q *Queue) CompactJournal(ctx context.Context, olderThan time.Time) (uint64, error) {
	if err := q.checkConn(); err != nil {
		return 0, err
	}
	kv, err := q.journal(ctx)
	if err != nil {
		return 0, err
	}
	var keys []string
	err = q.rpc(ctx, func(ctx context.Context) error {
		lister, err := kv.ListKeys(ctx)
		if err != nil {
			return err
		}
		for k := range lister.Keys() {
			keys = append(keys, k)
		}
		return nil
	})
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return 0, fmt.Errorf("journal keys: %w", err)
	}
	floors := map[int]uint64{}
	var removed uint64
	for _, key := range keys {
		part, rest, ok := strings.Cut(key, ".")
		p, perr := strconv.Atoi(part)
		if !ok || perr != nil || q.checkPartition(p) != nil {
			continue // a replay marker (replay.<entry>), removed with its entry
		}
		var entry jetstream.KeyValueEntry
		err := q.rpc(ctx, func(ctx context.Context) error {
			var err error
			entry, err = kv.Get(ctx, key)
			return err
		})
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return removed, err
		}
		_, id, _ := strings.Cut(rest, ".")
		e, err := decodePlan(id, entry.Value())
		if err != nil || !entry.Created().Before(olderThan) {
			continue
		}
		floor, seen := floors[p]
		if !seen {
			if floor, _, err = q.floorAndLast(ctx, p); err != nil {
				return removed, err
			}
			floors[p] = floor
		}
		acked := true
		for _, f := range e.plan.Frames {
			acked = acked && f.Seq <= floor
		}
		if !acked {
			continue
		}
		if err := q.rpc(ctx, func(ctx context.Context) error { return kv.Purge(ctx, key) }); err != nil {
			return removed, err
		}
		removed++
	}
	age := q.now().Sub(olderThan)
	err = q.rpc(ctx, func(ctx context.Context) error {
		return kv.PurgeDeletes(ctx, jetstream.DeleteMarkersOlderThan(max(age, time.Nanosecond)))
	})
	return removed, err
}

// CompactJournal implements mq.JournalCompactor.
func (h *Handle) CompactJournal(ctx context.Context, olderThan time.Time) (uint64, error) {
	q, err := h.Queue()
	if err != nil {
		return 0, err
	}
	return q.CompactJournal(ctx, olderThan)
}
