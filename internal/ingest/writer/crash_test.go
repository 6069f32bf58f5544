package writer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// These tests reproduce what a SIGKILL of the all-in-one process does to the embedded queue
// server: nats-server writes consumer state (delivery counts, acks) to disk asynchronously, so
// after the restart frames that were delivered — planned, inserted, even acknowledged — come back
// as first deliveries. The extreme of that is a consumer whose whole state is gone, which the
// tests produce by deleting the durable consumer while the queue is down and letting the next
// boot recreate it: every retained frame is delivered again with a delivery count of 1.

// openQueue opens (or reopens) an embedded queue on dir.
func openQueue(t *testing.T, dir string, ackWait time.Duration) *embeddedmq.Queue {
	t.Helper()
	q, err := embeddedmq.New(embeddedmq.Config{Dir: dir, Partitions: 2, AckWait: ackWait}, embeddedmq.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	return q
}

// loseConsumerState deletes every partition's durable ingest consumer of the queue on dir, so the
// next open recreates it with no delivery or ack state.
func loseConsumerState(t *testing.T, dir string) {
	t.Helper()
	q := openQueue(t, dir, time.Second)
	jq, err := q.Queue()
	if err != nil {
		t.Fatal(err)
	}
	for p := range q.Partitions() {
		if err := jq.JetStream().DeleteConsumer(t.Context(), jq.Names().Stream(p), jsmq.ConsumerName); err != nil {
			t.Fatalf("deleting the consumer of partition %d: %v", p, err)
		}
	}
	if err := q.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestAckedBatchIsNotInsertedAgainWhenAcksAreLost: a batch inserted, marked and acknowledged,
// then the queue loses its consumer state: every frame comes back as a first delivery. The
// writer finds their plan marked inserted and acknowledges them without a second insert — on a
// table that does not deduplicate, so a second insert would show.
func TestAckedBatchIsNotInsertedAgainWhenAcksAreLost(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	e.q = openQueue(t, dir, time.Second)
	ps := publishBatch(t, e)
	stop := runWriter(t, Deps{Consumer: e.q, Store: e.s, Targets: e, Hooks: e.settledHook()})
	e.waitSettled(t, ps...)
	stop()
	wantIDsOnce(t, e)
	_ = e.q.Close(t.Context())

	loseConsumerState(t, dir)
	e.q = openQueue(t, dir, time.Second)
	e.done = map[mq.Position]bool{}
	m, _ := NewMetrics(nil)
	runWriter(t, Deps{Consumer: e.q, Store: e.s, Targets: e, Metrics: m, Hooks: e.settledHook()})
	e.waitSettled(t, ps...)
	wantIDsOnce(t, e)
	if n := inDoubtCount(t, m, "already_inserted"); n != float64(len(ps)) {
		t.Fatalf("frames acknowledged as already inserted after the state loss: %v, want %d", n, len(ps))
	}
}

// dieAfterInsert inserts for real, then takes the queue away: the process "dies" between the
// insert and the mark, so the plan stays in doubt and nothing is acknowledged.
type dieAfterInsert struct {
	store.Inserter
	once sync.Once
	die  func()
}

func (d *dieAfterInsert) Insert(ctx context.Context, b store.Batch) error {
	err := d.Inserter.Insert(ctx, b)
	if err == nil {
		d.once.Do(d.die)
	}
	return err
}

// TestInDoubtBatchIsRebuiltWhenDeliveryCountsAreLost: the process dies between an insert and its
// mark, the queue loses its consumer state, and new rows arrive before the restart, so the
// redelivered frames (all first deliveries) are fetched together with new ones. The writer must
// still rebuild the in-doubt batch exactly (same frames, same tokens), which the table's
// deduplication window drops, and insert the new rows in a batch of their own.
func TestInDoubtBatchIsRebuiltWhenDeliveryCountsAreLost(t *testing.T) {
	e := newEnv(t)
	if err := e.s.Exec(t.Context(), e.target, "ALTER TABLE events MODIFY SETTING non_replicated_deduplication_window = 100"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first := openQueue(t, dir, time.Second)
	e.q = first
	ps := publishBatch(t, e)
	died := make(chan struct{})
	ins := &dieAfterInsert{Inserter: e.s, die: func() { _ = first.Close(context.Background()); close(died) }}
	stop := runWriter(t, Deps{Consumer: first, Store: ins, Targets: e})
	select {
	case <-died:
	case <-time.After(30 * time.Second):
		t.Fatal("nothing was inserted within 30s")
	}
	stop()
	if got := e.ids(t); len(got) == 0 {
		t.Fatal("the first life inserted nothing")
	}

	loseConsumerState(t, dir)
	e.q = openQueue(t, dir, time.Second)
	// New rows, queued before the writer starts: they are fetched with the redelivered frames.
	ps = append(ps, e.publish(t, `[7,"g"]`), e.publish(t, `[8,"h"]`))
	m, _ := NewMetrics(nil)
	runWriter(t, Deps{Consumer: e.q, Store: e.s, Targets: e, Metrics: m, Hooks: e.settledHook()})
	e.waitSettled(t, ps...)
	if got := e.ids(t); fmt.Sprint(got) != "[1 2 3 4 5 6 7 8]" {
		t.Fatalf("inserted ids %v, want each of 1-8 exactly once", got)
	}
	if n := inDoubtCount(t, m, "reinserted_deduplicated"); n != 1 {
		t.Fatalf("in-doubt batches rebuilt: %v, want 1", n)
	}
}

// slowStore delays every insert by delay: a ClickHouse that takes longer than the queue's ack
// wait to answer.
type slowStore struct {
	store.Inserter
	delay   time.Duration
	inserts atomic.Int64
}

func (s *slowStore) Insert(ctx context.Context, b store.Batch) error {
	s.inserts.Add(1)
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return s.Inserter.Insert(ctx, b)
}

func counterOf(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var out dto.Metric
	if err := c.Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetCounter().GetValue()
}

// TestHeldFramesAreNotRedelivered: inserts take three ack waits, and frames keep arriving while
// one is in flight, so frames wait in the writer far longer than the ack wait. They are reported
// in progress, so the queue never hands them out again, and every row lands once — on a table
// that does not deduplicate.
func TestHeldFramesAreNotRedelivered(t *testing.T) {
	e := newEnv(t)
	const ackWait = 500 * time.Millisecond
	e.q = openQueue(t, t.TempDir(), ackWait)
	m, _ := NewMetrics(nil)
	slow := &slowStore{Inserter: e.s, delay: 3 * ackWait}
	cfg := DefaultConfig()
	cfg.MaxWait, cfg.FetchWait = 20*time.Millisecond, 50*time.Millisecond
	cfg.ProgressInterval = ackWait / 4
	cfg.InsertTimeout = time.Minute
	runWriterWith(t, cfg, Deps{Consumer: e.q, Store: slow, Targets: e, Metrics: m, Hooks: e.settledHook()})

	var ps []mq.Position
	var want []uint64
	for i := range 3 {
		// Each round waits for the previous insert to be in flight, so its frames wait behind it.
		poll.Until(t, 30*time.Second, "the previous round's insert in flight", func() bool { return slow.inserts.Load() >= int64(i) })
		for j := range 4 {
			id := uint64(i*4 + j + 1)
			want = append(want, id)
			ps = append(ps, e.publish(t, fmt.Sprintf(`[%d,"u"]`, id)))
		}
	}
	e.waitSettled(t, ps...)
	if got := e.ids(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("inserted ids %v, want %v once each", got, want)
	}
	if n := counterOf(t, m.redeliveredHeld); n != 0 {
		t.Fatalf("%v frames were delivered again while held: in-progress reports did not keep them", n)
	}
	if n := counterOf(t, m.progress); n == 0 {
		t.Fatal("no in-progress report was sent although frames were held for several ack waits")
	}
}

// TestRedeliveryWhileHeldIsDropped: without in-progress reports the queue delivers held frames
// again after the ack wait; the writer drops those deliveries instead of inserting the rows a
// second time.
func TestRedeliveryWhileHeldIsDropped(t *testing.T) {
	e := newEnv(t)
	const ackWait = 300 * time.Millisecond
	e.q = openQueue(t, t.TempDir(), ackWait)
	m, _ := NewMetrics(nil)
	slow := &slowStore{Inserter: e.s, delay: 4 * ackWait}
	cfg := DefaultConfig()
	cfg.MaxWait, cfg.FetchWait = 20*time.Millisecond, 50*time.Millisecond
	cfg.ProgressInterval = 0
	runWriterWith(t, cfg, Deps{Consumer: e.q, Store: slow, Targets: e, Metrics: m, Hooks: e.settledHook()})
	ps := publishBatch(t, e)
	e.waitSettled(t, ps...)
	wantIDsOnce(t, e)
	if n := counterOf(t, m.redeliveredHeld); n == 0 {
		t.Fatal("no frame was delivered again while held: the test did not exercise the drop")
	}
}
