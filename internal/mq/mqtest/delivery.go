package mqtest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

func testRoundTrip(t *testing.T, nh NewHarness, _ Caps) {
	h := nh(t, Options{})
	q := h.Queue
	names := []struct{ tenant, table string }{
		{"acme", "events"},
		{"a.b", "t.b.l"},
		{"wild*", "gt>"},
		{"sp ace", "tab\tle"},
		{"ünï", "表"},
		{"til~de", "%2E"},
	}
	accepted := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for i, n := range names {
		r := mq.Record{
			Tenant: n.tenant, Table: n.table, Payload: fmt.Appendf(nil, "payload-%d", i),
			Headers:    map[string]string{mq.HeaderTraceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "x": n.table},
			AcceptedAt: accepted,
		}
		res := publish(t, q, r)
		s := subscribe(t, q, n.tenant, n.table)
		got := fetchRecords(t, s, 1, 10*time.Second)
		g := got[0]
		if g.Tenant != n.tenant || g.Table != n.table {
			t.Fatalf("got tenant/table %q/%q, want %q/%q", g.Tenant, g.Table, n.tenant, n.table)
		}
		if !bytes.Equal(g.Payload, r.Payload) {
			t.Fatalf("payload %q, want %q", g.Payload, r.Payload)
		}
		if g.Headers[mq.HeaderTraceparent] != r.Headers[mq.HeaderTraceparent] || g.Headers["x"] != n.table {
			t.Fatalf("headers %v, want %v", g.Headers, r.Headers)
		}
		if !g.AcceptedAt.Equal(accepted) {
			t.Fatalf("accepted at %v, want %v", g.AcceptedAt, accepted)
		}
		if g.Position != res.Position {
			t.Fatalf("delivered position %v, publish returned %v", g.Position, res.Position)
		}
	}
}

func testOrder(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{}).Queue
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last mq.Position
			for i := 0; i < each; i++ {
				res, err := q.Publish(t.Context(), mq.Record{Tenant: "t", Table: "ordered", Payload: fmt.Appendf(nil, "%d-%d", w, i)})
				if err != nil {
					errs <- err
					return
				}
				if !last.Less(res.Position) {
					errs <- fmt.Errorf("writer %d: position %v not after %v", w, res.Position, last)
					return
				}
				last = res.Position
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s := subscribe(t, q, "t", "ordered")
	got := fetchRecords(t, s, writers*each, 20*time.Second)
	next := make([]int, writers)
	var prev mq.Position
	for i, r := range got {
		if i > 0 && !prev.Less(r.Position) {
			t.Fatalf("record %d at %v delivered after %v", i, r.Position, prev)
		}
		prev = r.Position
		var w, n int
		if _, err := fmt.Sscanf(string(r.Payload), "%d-%d", &w, &n); err != nil {
			t.Fatalf("payload %q: %v", r.Payload, err)
		}
		if n != next[w] {
			t.Fatalf("writer %d: got record %d, want %d (order lost)", w, n, next[w])
		}
		next[w]++
	}
}

func testGroupCommit(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{}).Queue
	const n = 64
	start := make(chan struct{})
	var wg sync.WaitGroup
	pos := make([]mq.Position, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := q.Publish(t.Context(), rec("t", "gc", i))
			pos[i], errs[i] = res.Position, err
		}()
	}
	close(start)
	wg.Wait()
	frames := map[uint64]int{}
	seen := map[mq.Position]bool{}
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Fatalf("publish %d: %v", i, errs[i])
		}
		if seen[pos[i]] {
			t.Fatalf("position %v returned twice", pos[i])
		}
		seen[pos[i]] = true
		frames[pos[i].Seq]++
	}
	if len(frames) >= n {
		t.Fatalf("%d concurrent publishes used %d frames: no coalescing", n, len(frames))
	}
	s := subscribe(t, q, "t", "gc")
	got := fetchRecords(t, s, n, 20*time.Second)
	for _, r := range got {
		var i int
		if _, err := fmt.Sscanf(string(r.Payload), `{"i":%d}`, &i); err != nil || pos[i] != r.Position {
			t.Fatalf("record %q at %v, publish returned %v", r.Payload, r.Position, pos[i])
		}
	}
	t.Logf("%d publishes in %d frames", n, len(frames))
}

func testNak(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{}).Queue
	publish(t, q, rec("t", "nak", 1))
	s := subscribe(t, q, "t", "nak")
	d := fetchN(t, s, 1, 10*time.Second)[0]
	const delay = 700 * time.Millisecond
	nakAt := time.Now()
	if err := d.Nak(ctxT(t), delay); err != nil {
		t.Fatalf("nak: %v", err)
	}
	if err := d.Ack(ctxT(t)); err == nil {
		t.Fatal("ack after nak succeeded, want mq.ErrSettled")
	}
	again := fetchN(t, s, 1, 10*time.Second)[0]
	if el := time.Since(nakAt); el < delay-50*time.Millisecond {
		t.Fatalf("redelivered after %v, before the nak delay %v", el, delay)
	}
	if again.Meta().Attempts != 2 || again.Meta().Seq != d.Meta().Seq {
		t.Fatalf("redelivery meta %+v, want attempts 2 of frame %d", again.Meta(), d.Meta().Seq)
	}
	if err := again.Ack(ctxT(t)); err != nil {
		t.Fatalf("ack: %v", err)
	}
}

func testAckWait(t *testing.T, nh NewHarness, _ Caps) {
	const ackWait = time.Second
	q := nh(t, Options{AckWait: ackWait}).Queue
	publish(t, q, rec("t", "ackwait", 1))
	s := subscribe(t, q, "t", "ackwait")
	first := fetchN(t, s, 1, 10*time.Second)[0]
	at := time.Now()
	again := fetchN(t, s, 1, 10*time.Second)[0]
	if el := time.Since(at); el < ackWait-100*time.Millisecond {
		t.Fatalf("redelivered after %v, before ack wait %v", el, ackWait)
	}
	if again.Meta().Seq != first.Meta().Seq || again.Meta().Attempts != 2 {
		t.Fatalf("redelivery meta %+v, want attempts 2 of frame %d", again.Meta(), first.Meta().Seq)
	}
	if !again.Meta().StoredAt.Equal(first.Meta().StoredAt) || again.Meta().StoredAt.IsZero() {
		t.Fatalf("stored-at changed across deliveries: %v then %v", first.Meta().StoredAt, again.Meta().StoredAt)
	}
	if err := again.Ack(ctxT(t)); err != nil {
		t.Fatalf("ack: %v", err)
	}
}

func testTerm(t *testing.T, nh NewHarness, _ Caps) {
	const ackWait = 500 * time.Millisecond
	q := nh(t, Options{AckWait: ackWait}).Queue
	publish(t, q, rec("t", "term", 1))
	s := subscribe(t, q, "t", "term")
	d := fetchN(t, s, 1, 10*time.Second)[0]
	if err := d.Term(ctxT(t), "bad frame"); err != nil {
		t.Fatalf("term: %v", err)
	}
	expectNone(t, s, 3*ackWait)
}
