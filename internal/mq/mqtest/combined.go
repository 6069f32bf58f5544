package mqtest

import (
	"context"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// testRetentionRedeliveryDLQReplay exercises retention together with
// redelivery, dead-lettering and replay: trimming after a mix of settled and
// unsettled deliveries removes only settled frames, every unsettled frame is
// still redelivered, the dead letter keeps its record, and a replay from a
// trimmed position reports the reset and then the retained records.
func testRetentionRedeliveryDLQReplay(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{Partitions: 1, AckWait: time.Second}).Queue
	const n = 10
	var pos []mq.Position
	for i := 0; i < n; i++ {
		pos = append(pos, publish(t, q, rec("t", "mix", i)).Position)
	}
	s := subscribe(t, q, "t", "mix")
	ds := fetchN(t, s, n, 10*time.Second)
	for i := 0; i < 3; i++ {
		if err := ds[i].Ack(ctxT(t)); err != nil {
			t.Fatalf("ack %d: %v", i, err)
		}
	}
	if err := ds[3].(mq.DeadLetterer).DeadLetter(ctxT(t), mq.Reason{Code: "bad"}); err != nil {
		t.Fatalf("dead letter: %v", err)
	}
	for i := 4; i < 6; i++ {
		if err := ds[i].Nak(ctxT(t), 200*time.Millisecond); err != nil {
			t.Fatalf("nak %d: %v", i, err)
		}
	}
	// ds[6:] stay unacknowledged until ack wait expires.
	removed, err := q.Trim(ctxT(t), 0, pos[n-1].Seq+1, time.Time{})
	if err != nil || removed != 4 {
		t.Fatalf("trim removed %d, %v; want the 4 settled frames", removed, err)
	}

	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	c := &collector{events: make(chan mq.Event, 20)}
	go func() { _ = q.Replay(ctx, "t", "mix", mq.Cursor{After: pos[0]}, c.fn) }()
	if e := c.next(t, 10*time.Second); e.Reset == nil || e.Reset.First.Seq != pos[4].Seq {
		t.Fatalf("replay from a trimmed position: first event %+v, want a reset to %v", e, pos[4])
	}
	for i := 4; i < n; i++ {
		if e := c.next(t, 10*time.Second); e.Record == nil || e.Record.Position != pos[i] {
			t.Fatalf("replay event %+v, want record at %v", e, pos[i])
		}
	}

	again := fetchN(t, s, n-4, 15*time.Second)
	seen := map[uint64]bool{}
	for _, d := range again {
		if d.Meta().Attempts < 2 || d.Meta().Seq < pos[4].Seq {
			t.Fatalf("redelivery %+v, want a second attempt of an unsettled frame", d.Meta())
		}
		seen[d.Meta().Seq] = true
		if err := d.Ack(ctxT(t)); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
	if len(seen) != n-4 {
		t.Fatalf("redelivered %d distinct frames, want %d", len(seen), n-4)
	}
	if removed, err := q.Trim(ctxT(t), 0, pos[n-1].Seq+1, time.Time{}); err != nil || removed != n-4 {
		t.Fatalf("final trim removed %d, %v; want %d", removed, err, n-4)
	}
	entries, err := q.DLQ().List(ctxT(t), "t", "mix", 0, 10)
	if err != nil || len(entries) != 1 || entries[0].Record.Position != pos[3] {
		t.Fatalf("dead letters %+v, %v; want the record at %v", entries, err, pos[3])
	}
}
