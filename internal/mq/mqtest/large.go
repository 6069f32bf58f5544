package mqtest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// largePayloads are payloads a queue may store differently from small ones: rows that repeat,
// bytes that do not compress, and a record over jsmq's 768 KiB frame bound, which travels alone.
func largePayloads() [][]byte {
	var rows bytes.Buffer
	for i := 0; rows.Len() < 200<<10; i++ {
		fmt.Fprintf(&rows, `{"id":%d,"name":"user-%d","score":%d.5}`+"\n", i, i%97, i%1000)
	}
	return [][]byte{rows.Bytes(), noise(100 << 10), bytes.Repeat([]byte("wavehouse "), 80<<10)}
}

// noise returns n bytes that do not compress.
func noise(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// testLargeRecordsRoundTrip: large records come back byte for byte through every reader of
// stored frames — a delivery, a replay, and the dead-letter queue.
func testLargeRecordsRoundTrip(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{}).Queue
	tenant, table := "t", "large"
	want := largePayloads()
	var pos []mq.Position
	for i, p := range want {
		r := mq.Record{Tenant: tenant, Table: table, Payload: bytes.Clone(p), Headers: map[string]string{"X-N": fmt.Sprint(i)}}
		pos = append(pos, publish(t, q, r).Position)
	}
	s := subscribe(t, q, tenant, table)
	ds := fetchN(t, s, len(want), 15*time.Second)
	got := records(ds)
	if len(got) != len(want) {
		t.Fatalf("delivered %d records, want %d", len(got), len(want))
	}
	for i, r := range got {
		if !bytes.Equal(r.Payload, want[i]) || r.Position != pos[i] || r.Headers["X-N"] != fmt.Sprint(i) {
			t.Fatalf("delivered record %d: %d bytes at %v headers %v, want %d bytes at %v", i, len(r.Payload), r.Position, r.Headers, len(want[i]), pos[i])
		}
	}

	ctx, cancel := context.WithCancel(ctxT(t))
	c := &collector{events: make(chan mq.Event, 10)}
	done := make(chan error, 1)
	go func() { done <- q.Replay(ctx, tenant, table, mq.Cursor{}, c.fn) }()
	for i := range want {
		e := c.next(t, 10*time.Second)
		if e.Record == nil || e.Record.Position != pos[i] || !bytes.Equal(e.Record.Payload, want[i]) {
			t.Fatalf("replayed event %d: %+v, want record %d at %v", i, e, i, pos[i])
		}
	}
	cancel()
	<-done

	dl, ok := ds[0].(mq.DeadLetterer)
	if !ok {
		t.Fatal("delivery does not implement mq.DeadLetterer")
	}
	if err := dl.DeadLetter(ctxT(t), mq.Reason{Code: "test", Message: "large", Attempts: 1, FirstFailure: time.Now()}); err != nil {
		t.Fatalf("dead letter: %v", err)
	}
	entries, err := q.DLQ().List(ctxT(t), tenant, table, 0, 10)
	if err != nil || len(entries) != 1 {
		t.Fatalf("dead letters: %d entries, %v; want 1", len(entries), err)
	}
	e, err := q.DLQ().Get(ctxT(t), entries[0].ID)
	if err != nil || !bytes.Equal(e.Record.Payload, want[0]) || e.Record.Position != pos[0] {
		t.Fatalf("dead letter %d: %d bytes at %v, %v; want %d bytes at %v", entries[0].ID, len(e.Record.Payload), e.Record.Position, err, len(want[0]), pos[0])
	}
	for _, d := range ds[1:] {
		if err := d.Ack(ctxT(t)); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
}
