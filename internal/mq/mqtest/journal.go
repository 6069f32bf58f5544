package mqtest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

func journalOf(t *testing.T, q mq.Queue) mq.Journal {
	t.Helper()
	j, ok := q.(mq.Journal)
	if !ok {
		t.Fatalf("%T does not implement mq.Journal", q)
	}
	return j
}

// keyedFrames publishes n keyed records (each a frame of its own) and fetches them unacked.
func keyedFrames(t *testing.T, q mq.Queue, tenant, table string, n int) (mq.Subscription, []mq.Delivery) {
	t.Helper()
	for i := range n {
		r := rec(tenant, table, i)
		r.IdempotencyKey = fmt.Sprintf("k%d", i)
		publish(t, q, r)
	}
	s := subscribe(t, q, tenant, table)
	return s, fetchN(t, s, n, 10*time.Second)
}

func refsOf(ds []mq.Delivery) ([]mq.FrameRef, time.Time) {
	refs := make([]mq.FrameRef, len(ds))
	since := time.Now()
	for i, d := range ds {
		m := d.Meta()
		refs[i] = mq.FrameRef{Partition: m.Partition, Seq: m.Seq}
		if m.StoredAt.Before(since) {
			since = m.StoredAt
		}
	}
	return refs, since
}

func newPlan(tenant, table string, refs []mq.FrameRef) mq.BatchPlan {
	return mq.BatchPlan{ID: mq.PlanID(refs), Tenant: tenant, Table: table, Frames: refs}
}

// testJournalPlanLifecycle: a plan is found from each of its frames (and only from them, only
// for its table), a claim excludes a second claimer until released, MarkInserted keeps the
// failed records, an inserted plan cannot be claimed, and Forget removes it.
func testJournalPlanLifecycle(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{}).Queue
	j := journalOf(t, q)
	ctx := ctxT(t)
	_, ds := keyedFrames(t, q, "acme", "plans", 4)
	refs, since := refsOf(ds)
	p := newPlan("acme", "plans", refs[:3])
	if err := j.Plan(ctx, p); err != nil {
		t.Fatalf("plan: %v", err)
	}
	got, err := j.Lookup(ctx, "acme", "plans", refs, since)
	if err != nil {
		t.Fatalf("lookup: %v", err)
	}
	if len(got) != 3 {
		t.Fatalf("lookup found %d frames, want the plan's 3: %v", len(got), got)
	}
	for _, r := range refs[:3] {
		g := got[r]
		if g.ID != p.ID || g.Inserted || len(g.Frames) != 3 || g.Frames[1] != refs[1] {
			t.Fatalf("lookup of %v = %+v, want plan %s not inserted with frames %v", r, g, p.ID, refs[:3])
		}
	}
	if _, ok := got[refs[3]]; ok {
		t.Fatalf("frame %v outside the plan was found", refs[3])
	}
	if other, err := j.Lookup(ctx, "other", "plans", refs, since); err != nil || len(other) != 0 {
		t.Fatalf("lookup for another tenant = %v, %v; want nothing", other, err)
	}

	c, ok, err := j.Claim(ctx, p, time.Minute)
	if err != nil || !ok || c.ClaimedUntil.IsZero() {
		t.Fatalf("first claim = %+v, %v, %v; want claimed", c, ok, err)
	}
	if _, ok, err := j.Claim(ctx, p, time.Minute); err != nil || ok {
		t.Fatalf("second claim while the first is live = %v, %v; want refused", ok, err)
	}
	if err := j.Release(ctx, c); err != nil {
		t.Fatalf("release: %v", err)
	}
	if _, ok, err := j.Claim(ctx, p, time.Nanosecond); err != nil || !ok {
		t.Fatalf("claim after release = %v, %v; want claimed", ok, err)
	}
	// The nanosecond lease has expired: a crashed claimer does not block recovery.
	if _, ok, err := j.Claim(ctx, p, time.Minute); err != nil || !ok {
		t.Fatalf("claim after the previous lease expired = %v, %v; want claimed", ok, err)
	}

	failed := []mq.FailedRecord{{Frame: 1, Record: 0, Code: "type_mismatch", Message: "row 0: bad"}}
	if err := j.MarkInserted(ctx, p, failed); err != nil {
		t.Fatalf("mark inserted: %v", err)
	}
	got, err = j.Lookup(ctx, "acme", "plans", refs, since)
	if err != nil {
		t.Fatalf("lookup after mark: %v", err)
	}
	g := got[refs[2]]
	if !g.Inserted || len(g.Failed) != 1 || g.Failed[0] != failed[0] {
		t.Fatalf("lookup after mark = %+v, want inserted with failed %v", g, failed)
	}
	if c, ok, err := j.Claim(ctx, p, time.Minute); err != nil || ok || !c.Inserted {
		t.Fatalf("claim of an inserted plan = %+v, %v, %v; want refused, inserted", c, ok, err)
	}

	if err := j.Forget(ctx, p); err != nil {
		t.Fatalf("forget: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err = j.Lookup(ctx, "acme", "plans", refs, since)
		if err != nil {
			t.Fatalf("lookup after forget: %v", err)
		}
		if len(got) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("plan still found 5s after Forget: %v", got)
		}
	}
}

// testJournalLatestPlanWins: a frame planned twice is found with its later plan.
func testJournalLatestPlanWins(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{}).Queue
	j := journalOf(t, q)
	ctx := ctxT(t)
	_, ds := keyedFrames(t, q, "acme", "replanned", 3)
	refs, since := refsOf(ds)
	first := newPlan("acme", "replanned", refs[:2])
	second := newPlan("acme", "replanned", refs[1:])
	for _, p := range []mq.BatchPlan{first, second} {
		if err := j.Plan(ctx, p); err != nil {
			t.Fatalf("plan: %v", err)
		}
	}
	got, err := j.Lookup(ctx, "acme", "replanned", refs, since)
	if err != nil {
		t.Fatalf("lookup: %v", err)
	}
	if got[refs[0]].ID != first.ID || got[refs[1]].ID != second.ID || got[refs[2]].ID != second.ID {
		t.Fatalf("lookup = %v; want frame 0 in the first plan, 1 and 2 in the second", got)
	}
}

// testJournalGetFrame: an unacknowledged frame reads back by reference with the records it
// was delivered with; an unknown sequence is mq.ErrNotFound.
func testJournalGetFrame(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{}).Queue
	j := journalOf(t, q)
	ctx := ctxT(t)
	for i := range 5 {
		publish(t, q, rec("acme", "frames", i))
	}
	s := subscribe(t, q, "acme", "frames")
	ds := fetchN(t, s, 1, 10*time.Second)
	m := ds[0].Meta()
	recs, err := j.GetFrame(ctx, mq.FrameRef{Partition: m.Partition, Seq: m.Seq})
	if err != nil {
		t.Fatalf("get frame: %v", err)
	}
	want := ds[0].Records()
	if len(recs) != len(want) {
		t.Fatalf("get frame: %d records, delivered %d", len(recs), len(want))
	}
	for i := range recs {
		if recs[i].Tenant != "acme" || recs[i].Table != "frames" || recs[i].Position != want[i].Position || !bytes.Equal(recs[i].Payload, want[i].Payload) {
			t.Fatalf("get frame record %d = %+v, delivered %+v", i, recs[i], want[i])
		}
	}
	_, err = j.GetFrame(ctx, mq.FrameRef{Partition: m.Partition, Seq: m.Seq + 1000})
	wantIs(t, err, mq.ErrNotFound, "get frame of an unknown sequence")
	_, err = j.GetFrame(ctx, mq.FrameRef{Partition: q.Partitions(), Seq: 1})
	wantIs(t, err, mq.ErrInvalid, "get frame of a partition out of range")
}
