package mqtest

import (
	"bytes"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

func testDeadLetter(t *testing.T, nh NewHarness, _ Caps) {
	const ackWait = 500 * time.Millisecond
	q := nh(t, Options{AckWait: ackWait}).Queue
	tenant, table := "ten.ant", "bad table"
	r := rec(tenant, table, 7)
	r.Headers = map[string]string{mq.HeaderTraceparent: "00-aa-bb-01"}
	r.IdempotencyKey = "key-7"
	res := publish(t, q, r)
	s := subscribe(t, q, tenant, table)
	d := fetchN(t, s, 1, 10*time.Second)[0]
	dl, ok := d.(mq.DeadLetterer)
	if !ok {
		t.Fatal("delivery does not implement mq.DeadLetterer")
	}
	first := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	reason := mq.Reason{Code: "type_mismatch", Message: "column x: not a number", Attempts: 3, FirstFailure: first}
	if err := dl.DeadLetter(ctxT(t), reason); err != nil {
		t.Fatalf("dead letter: %v", err)
	}
	wantIs(t, d.Ack(ctxT(t)), mq.ErrSettled, "ack after dead letter")
	wantIs(t, dl.DeadLetter(ctxT(t), reason), mq.ErrSettled, "second dead letter")
	expectNone(t, s, 3*ackWait)

	entries, err := q.DLQ().List(ctxT(t), tenant, table, 0, 10)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(entries) != 1 {
		t.Fatalf("dead letters: %d entries, want 1", len(entries))
	}
	e := entries[0]
	if e.Record.Tenant != tenant || e.Record.Table != table || !bytes.Equal(e.Record.Payload, r.Payload) {
		t.Fatalf("entry record %+v, want %s/%s %q", e.Record, tenant, table, r.Payload)
	}
	if e.Record.Position != res.Position || e.Record.Headers[mq.HeaderTraceparent] != "00-aa-bb-01" || e.Record.IdempotencyKey != "key-7" {
		t.Fatalf("entry lost the record's identity: %+v", e.Record)
	}
	if e.Reason.Code != reason.Code || e.Reason.Message != reason.Message || e.Reason.Attempts != 3 ||
		!e.Reason.FirstFailure.Equal(first) || e.Reason.LastFailure.IsZero() || e.DeadAt.IsZero() {
		t.Fatalf("entry reason %+v at %v, want %+v", e.Reason, e.DeadAt, reason)
	}
	got, err := q.DLQ().Get(ctxT(t), e.ID)
	if err != nil || !bytes.Equal(got.Record.Payload, r.Payload) || got.Reason.Code != reason.Code {
		t.Fatalf("get %d: %+v, %v", e.ID, got, err)
	}
	if _, err := q.DLQ().Get(ctxT(t), e.ID+1000); !isNotFound(err) {
		t.Fatalf("get missing entry: %v, want mq.ErrNotFound", err)
	}
}

func isNotFound(err error) bool { return err != nil && errorsIs(err, mq.ErrNotFound) }

func testDLQOps(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{})
	qq := q.Queue
	// Three records of table a, one of table b, dead-lettered one by one.
	for i, tb := range []string{"a", "a", "a", "b"} {
		publish(t, qq, rec("t1", tb, i))
		s := subscribe(t, qq, "t1", tb)
		d := fetchN(t, s, 1, 10*time.Second)[0]
		if err := d.(mq.DeadLetterer).DeadLetter(ctxT(t), mq.Reason{Code: "bad", Message: "bad row"}); err != nil {
			t.Fatalf("dead letter: %v", err)
		}
	}
	publish(t, qq, rec("t2", "a", 9))
	s2 := subscribe(t, qq, "t2", "a")
	if err := fetchN(t, s2, 1, 10*time.Second)[0].(mq.DeadLetterer).DeadLetter(ctxT(t), mq.Reason{Code: "bad"}); err != nil {
		t.Fatalf("dead letter: %v", err)
	}

	counts, err := qq.DLQ().Counts(ctxT(t), "")
	if err != nil {
		t.Fatalf("counts: %v", err)
	}
	want := map[mq.TableKey]uint64{{Tenant: "t1", Table: "a"}: 3, {Tenant: "t1", Table: "b"}: 1, {Tenant: "t2", Table: "a"}: 1}
	if len(counts) != len(want) {
		t.Fatalf("counts %v, want %v", counts, want)
	}
	for k, v := range want {
		if counts[k] != v {
			t.Fatalf("counts %v, want %v", counts, want)
		}
	}
	c1, err := qq.DLQ().Counts(ctxT(t), "t1")
	if err != nil || len(c1) != 2 {
		t.Fatalf("counts of t1: %v, %v", c1, err)
	}

	// Pagination.
	page1, err := qq.DLQ().List(ctxT(t), "t1", "a", 0, 2)
	if err != nil || len(page1) != 2 {
		t.Fatalf("page 1: %d entries, %v", len(page1), err)
	}
	page2, err := qq.DLQ().List(ctxT(t), "t1", "a", page1[1].ID, 2)
	if err != nil || len(page2) != 1 || page2[0].ID <= page1[1].ID {
		t.Fatalf("page 2: %+v, %v", page2, err)
	}

	// Replay one entry of t1/a back to the ingest subject.
	n, err := qq.DLQ().Replay(ctxT(t), "t1", "a", 1)
	if err != nil || n != 1 {
		t.Fatalf("replay: %d, %v", n, err)
	}
	s := subscribe(t, qq, "t1", "a")
	got := fetchRecords(t, s, 1, 10*time.Second)
	if !bytes.Equal(got[0].Payload, page1[0].Record.Payload) {
		t.Fatalf("replayed payload %q, want %q", got[0].Payload, page1[0].Record.Payload)
	}
	left, _ := qq.DLQ().List(ctxT(t), "t1", "a", 0, 10)
	if len(left) != 2 {
		t.Fatalf("after replay %d entries left, want 2", len(left))
	}

	// Purge t1/a only.
	purged, err := qq.DLQ().Purge(ctxT(t), "t1", "a")
	if err != nil || purged != 2 {
		t.Fatalf("purge: %d, %v", purged, err)
	}
	counts, err = qq.DLQ().Counts(ctxT(t), "")
	if err != nil || counts[mq.TableKey{Tenant: "t1", Table: "a"}] != 0 || counts[mq.TableKey{Tenant: "t1", Table: "b"}] != 1 || counts[mq.TableKey{Tenant: "t2", Table: "a"}] != 1 {
		t.Fatalf("counts after purge: %v, %v", counts, err)
	}
}
