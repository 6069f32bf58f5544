package stream_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/stream"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// publishWave publishes n records concurrently (so several share a frame
// and ids carry an index) and returns their positions.
func publishWave(t testing.TB, q mq.Publisher, table string, base, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			rec := mq.Record{Tenant: tenant, Table: table, Payload: encode(t, []string{"id", "name"}, []any{base + i, "r" + strconv.Itoa(base+i)})}
			if _, err := q.Publish(context.Background(), rec); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("publish: %v", err)
	}
}

type got struct{ id, data string }

// TestResumeProperty: for random cut points, the concatenation of the
// streams resumed with Last-Event-ID equals the uninterrupted stream, while
// records keep arriving live during the resumed streams.
func TestResumeProperty(t *testing.T) {
	q := openQueue(t, t.TempDir())
	s := newServer(t, q, stream.Config{})
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for trial := range 4 {
		table := fmt.Sprintf("prop_%d", trial)
		const before, during = 40, 40
		publishWave(t, q, table, 0, before)

		full := dial(t, streamURL(s, table, "since=0"), nil)
		cuts := map[int]bool{}
		for range 1 + rng.IntN(5) {
			cuts[1+rng.IntN(before+during-1)] = true
		}
		var resumed []got
		c := dial(t, streamURL(s, table, "since=0"), nil)
		liveDone := make(chan struct{})
		go func() { defer close(liveDone); publishWave(t, q, table, before, during) }()
		for len(resumed) < before+during {
			ev := c.nextRows(t)
			resumed = append(resumed, got{ev.ID, ev.Data})
			if cuts[len(resumed)] {
				c.Close()
				c = dial(t, streamURL(s, table, "since=0"), map[string]string{"Last-Event-ID": ev.ID})
			}
		}
		<-liveDone
		var want []got
		for len(want) < before+during {
			ev := full.nextRows(t)
			want = append(want, got{ev.id(), ev.Data})
		}
		if !slices.Equal(resumed, want) {
			t.Fatalf("trial %d cuts %v: resumed stream differs\nresumed %v\nwant    %v", trial, cuts, resumed, want)
		}
		multi := false
		for _, g := range want {
			multi = multi || posOf(t, g.id).Index > 0
		}
		if trial == 0 && !multi {
			t.Log("no frame carried several records in this run")
		}
		c.Close()
		full.Close()
	}
}

func (e sseEvent) id() string { return e.ID }

// TestResumeAcrossQueueRestart: a client resumes with its Last-Event-ID
// after the queue (and the service) restarted on the same data directory.
func TestResumeAcrossQueueRestart(t *testing.T) {
	dir := t.TempDir()
	q1 := openQueue(t, dir)
	s1 := newServer(t, q1, stream.Config{})
	var all []mq.Position
	for i := range 10 {
		all = append(all, publish(t, q1, "events", []any{i, "a"}))
	}
	c := dial(t, streamURL(s1, "events", "since=0"), nil)
	var last string
	for i := range 5 {
		ev := c.nextRows(t)
		if ev.ID != eid(t, q1, "events", all[i]) {
			t.Fatalf("event %d id %s, want %s", i, ev.ID, all[i])
		}
		last = ev.ID
	}
	first := eid(t, q1, "events", all[0])
	if err := s1.svc.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := q1.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.Close()

	q2 := openQueue(t, dir)
	s2 := newServer(t, q2, stream.Config{})
	if got := eid(t, q2, "events", all[0]); got != first {
		t.Fatalf("the epoch changed across a restart on the same directory: %s, was %s", got, first)
	}
	c2 := dial(t, streamURL(s2, "events", ""), map[string]string{"Last-Event-ID": last})
	for i := 10; i < 15; i++ {
		all = append(all, publish(t, q2, "events", []any{i, "b"}))
	}
	for i := 5; i < 15; i++ {
		ev := c2.nextRows(t)
		if ev.ID != eid(t, q2, "events", all[i]) {
			t.Fatalf("after restart: event id %s, want %s", ev.ID, all[i])
		}
	}
}

// TestExpiredIDReset: an id older than retained history gets an explicit
// reset naming what was lost, then the retained and live records; a
// reconnect with the reset's id does not report the loss again.
func TestExpiredIDReset(t *testing.T) {
	q := openQueue(t, t.TempDir())
	s := newServer(t, q, stream.Config{})
	var old []mq.Position
	for i := range 5 {
		old = append(old, publish(t, q, "events", []any{i, "old"}))
	}
	// Insert (acknowledge) everything, then trim the history.
	p := mq.PartitionOf(tenant, "events", q.Partitions())
	sub, err := q.Subscribe(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for acked := 0; acked < len(old); {
		ds, err := sub.Fetch(t.Context(), 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if err := d.Ack(t.Context()); err != nil {
				t.Fatal(err)
			}
			acked += len(d.Records())
		}
	}
	poll.Until(t, 10*time.Second, "history trimmed", func() bool {
		if _, err := q.Trim(t.Context(), p, old[4].Seq+1, time.Time{}); err != nil {
			t.Fatal(err)
		}
		st, err := q.Stats(t.Context(), tenant, "events")
		return err == nil && st.Retained == 0
	})
	fresh := publish(t, q, "events", []any{5, "new"})

	requested := eid(t, q, "events", old[1])
	c := dial(t, streamURL(s, "events", "since="+requested), nil)
	ev := c.next(t)
	if ev.Type != "reset" {
		t.Fatalf("first event %q %s, want reset", ev.Type, ev.Data)
	}
	after := eid(t, q, "events", mq.Position{Seq: fresh.Seq - 1, Index: ^uint32(0)})
	if want := fmt.Sprintf(`{"after":"%s","first":"%s","reason":"trimmed","requested":"%s"}`,
		after, eid(t, q, "events", mq.Position{Seq: fresh.Seq}), requested); ev.Data != want || ev.ID != after {
		t.Fatalf("reset id %s data %s, want id %s data %s", ev.ID, ev.Data, after, want)
	}
	if ev := c.nextRows(t); ev.ID != eid(t, q, "events", fresh) {
		t.Fatalf("after reset: id %s, want %s", ev.ID, fresh)
	}
	live := publish(t, q, "events", []any{6, "live"})
	if ev := c.nextRows(t); ev.ID != eid(t, q, "events", live) {
		t.Fatalf("live after reset: id %s, want %s", ev.ID, live)
	}

	again := dial(t, streamURL(s, "events", ""), map[string]string{"Last-Event-ID": ev.ID})
	if ev := again.next(t); ev.Type != "rows" || ev.ID != eid(t, q, "events", fresh) {
		t.Fatalf("reconnect with the reset id: got %q %s, want rows %s", ev.Type, ev.ID, fresh)
	}
}
