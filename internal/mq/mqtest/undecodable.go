package mqtest

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// garbage is a stored message that is no frame of any format.
var garbage = []byte("\x00not a frame\xff{\"i\":1}")

// undecodableTenant and the "in_<p>" table name the dead-letter entries of
// undecodable messages whose subject names no table (see jsmq).
const undecodableTenant = "_undecodable"

func testUndecodableDeadLettered(t *testing.T, nh NewHarness, _ Caps) {
	h := nh(t, Options{AckWait: time.Second})
	if h.PublishRaw == nil {
		t.Skip("harness cannot publish raw messages")
	}
	q := h.Queue
	tenant, table := "t1", "raw"
	p := mq.PartitionOf(tenant, table, q.Partitions())
	before := publish(t, q, rec(tenant, table, 0)).Position
	seq := h.PublishRaw(t, p, tenant+"."+table, garbage, map[string]string{"X-Origin": "test"})
	badSeq := h.PublishRaw(t, p, "not-a-table", []byte("bad subject"), nil)
	corrupt := h.PublishRaw(t, p, tenant+"."+table, []byte{0xF1, 0x05, 0x01}, nil) // a frame header, then truncated
	after := publish(t, q, rec(tenant, table, 1)).Position

	s := subscribe(t, q, tenant, table)
	got := fetchRecords(t, s, 2, 10*time.Second)
	if len(got) != 2 || got[0].Position != before || got[1].Position != after {
		t.Fatalf("delivered %+v, want the records at %v and %v only", got, before, after)
	}
	expectNone(t, s, 2*time.Second) // nothing redelivered after the ack wait

	entries, err := q.DLQ().List(ctxT(t), tenant, table, 0, 10)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(entries) != 2 {
		t.Fatalf("dead letters of %s/%s: %d entries, want 2: %+v", tenant, table, len(entries), entries)
	}
	for i, want := range []struct {
		seq  uint64
		data []byte
	}{{seq, garbage}, {corrupt, []byte{0xF1, 0x05, 0x01}}} {
		e := entries[i]
		if e.Reason.Code != mq.ReasonUndecodable || e.Reason.Message == "" || e.Raw == nil {
			t.Fatalf("entry %d: reason %+v raw %+v, want code %q with the raw message", i, e.Reason, e.Raw, mq.ReasonUndecodable)
		}
		if !bytes.Equal(e.Raw.Data, want.data) || e.Raw.Seq != want.seq || e.Raw.Partition != p ||
			e.Record.Position != (mq.Position{Seq: want.seq}) || e.Record.Tenant != tenant || e.Record.Table != table ||
			len(e.Raw.Subject) == 0 || e.DeadAt.IsZero() {
			t.Fatalf("entry %d: %+v raw %+v, want seq %d bytes %q of partition %d", i, e, e.Raw, want.seq, want.data, p)
		}
	}
	if entries[0].Raw.Headers["X-Origin"] != "test" {
		t.Fatalf("raw headers %v, want X-Origin kept", entries[0].Raw.Headers)
	}
	got0, err := q.DLQ().Get(ctxT(t), entries[0].ID)
	if err != nil || got0.Raw == nil || !bytes.Equal(got0.Raw.Data, garbage) {
		t.Fatalf("get %d: %+v, %v", entries[0].ID, got0, err)
	}

	// A subject that names no table is kept under the undecodable tenant.
	counts, err := q.DLQ().Counts(ctxT(t), "")
	if err != nil {
		t.Fatalf("counts: %v", err)
	}
	badTable := "in_" + strconv.Itoa(p)
	if n := counts[mq.TableKey{Tenant: undecodableTenant, Table: badTable}]; n != 1 {
		t.Fatalf("counts %v: want 1 entry under %s/%s", counts, undecodableTenant, badTable)
	}
	bad, err := q.DLQ().List(ctxT(t), undecodableTenant, badTable, 0, 10)
	if err != nil || len(bad) != 1 || bad[0].Raw == nil || bad[0].Raw.Seq != badSeq || string(bad[0].Raw.Data) != "bad subject" ||
		bad[0].Record.Tenant != "" || bad[0].Reason.Code != mq.ReasonUndecodable {
		t.Fatalf("bad-subject entries %+v, %v", bad, err)
	}

	// Undecodable entries are never replayed into the queue.
	n, err := q.DLQ().Replay(ctxT(t), tenant, table, 10)
	if err != nil || n != 0 {
		t.Fatalf("replay of undecodable entries: %d, %v; want 0, nil", n, err)
	}
	if left, _ := q.DLQ().List(ctxT(t), tenant, table, 0, 10); len(left) != 2 {
		t.Fatalf("after replay %d entries left, want 2", len(left))
	}

	if h.Gatherer != nil {
		if v := counterValue(t, h, "wavehouse_mq_undecodable_total", "partition", strconv.Itoa(p)); v != 3 {
			t.Fatalf("wavehouse_mq_undecodable_total{partition=%d} = %v, want 3", p, v)
		}
	}
}

func testReplayUndecodableGap(t *testing.T, nh NewHarness, _ Caps) {
	h := nh(t, Options{})
	if h.PublishRaw == nil {
		t.Skip("harness cannot publish raw messages")
	}
	q := h.Queue
	tenant, table := "t1", "gappy"
	p := mq.PartitionOf(tenant, table, q.Partitions())
	r0 := publish(t, q, rec(tenant, table, 0)).Position
	bad := h.PublishRaw(t, p, tenant+"."+table, garbage, nil)
	r1 := publish(t, q, rec(tenant, table, 1)).Position

	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	c := &collector{events: make(chan mq.Event, 100)}
	done := make(chan error, 1)
	go func() { done <- q.Replay(ctx, tenant, table, mq.Cursor{}, c.fn) }()
	wantRecord := func(what string, pos mq.Position) {
		t.Helper()
		if e := c.next(t, 10*time.Second); e.Record == nil || e.Record.Position != pos {
			t.Fatalf("%s: event %+v, want record at %v", what, e, pos)
		}
	}
	wantGap := func(what string, seq uint64) {
		t.Helper()
		e := c.next(t, 10*time.Second)
		if e.Gap == nil || e.Gap.Position != (mq.Position{Seq: seq}) || e.Gap.Reason != mq.ReasonUndecodable {
			t.Fatalf("%s: event %+v, want a gap at sequence %d", what, e, seq)
		}
	}
	wantRecord("history before", r0)
	wantGap("history", bad)
	wantRecord("history after", r1)
	// Live: the reader keeps going past a second undecodable message.
	bad2 := h.PublishRaw(t, p, tenant+"."+table, garbage, nil)
	r2 := publish(t, q, rec(tenant, table, 2)).Position
	wantGap("live", bad2)
	wantRecord("live after", r2)
	select {
	case err := <-done:
		t.Fatalf("replay ended: %v", err)
	default:
	}
	cancel()
	<-done

	// Resuming after the gap (its sequence with the largest index) does not report it again.
	ctx2, cancel2 := context.WithCancel(ctxT(t))
	defer cancel2()
	c2 := &collector{events: make(chan mq.Event, 10)}
	go func() {
		_ = q.Replay(ctx2, tenant, table, mq.Cursor{After: mq.Position{Seq: bad, Index: ^uint32(0)}}, c2.fn)
	}()
	if e := c2.next(t, 10*time.Second); e.Record == nil || e.Record.Position != r1 {
		t.Fatalf("resumed after the gap: event %+v, want record at %v", e, r1)
	}
}

// counterValue returns the value of the counter name with label key=value
// (0 when absent).
func counterValue(t *testing.T, h *Harness, name, key, value string) float64 {
	t.Helper()
	mfs, err := h.Gatherer.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == key && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
