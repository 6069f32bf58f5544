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
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/chdbstore"
)

// lostResponse inserts through the real store but reports the first successful insert as
// failed transiently: the rows landed, the writer does not know — a timeout after the commit.
type lostResponse struct {
	*chdbstore.Store
	lost atomic.Bool
}

func (l *lostResponse) Insert(ctx context.Context, b store.Batch) error {
	err := l.Store.Insert(ctx, b)
	if err == nil && l.lost.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: response lost after the insert", store.ErrTimeout)
	}
	return err
}

// runWriter runs a writer until the returned stop is called (or the test ends).
func runWriter(t *testing.T, deps Deps) (stop func()) {
	t.Helper()
	return runWriterWith(t, testConfig(), deps)
}

// testConfig is the writer config of these tests: short flush waits and backoffs.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.MaxWait = 50 * time.Millisecond
	cfg.FetchWait = 50 * time.Millisecond
	cfg.BackoffMin, cfg.BackoffMax = 20*time.Millisecond, 100*time.Millisecond
	return cfg
}

// runWriterWith runs a writer with cfg until the returned stop is called (or the test ends).
func runWriterWith(t *testing.T, cfg Config, deps Deps) (stop func()) {
	t.Helper()
	w, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = w.Run(ctx); close(stopped) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-stopped }) }
	t.Cleanup(stop)
	return stop
}

func (e *env) settledHook() Hooks {
	return Hooks{Settled: func(_, _ string, p mq.Position, dead bool) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.done[p] = true
		e.dead[p] = dead
	}}
}

func inDoubtCount(t *testing.T, m *Metrics, outcome string) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.inDoubt.WithLabelValues(outcome).Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetCounter().GetValue()
}

func publishBatch(t *testing.T, e *env) []mq.Position {
	t.Helper()
	var ps []mq.Position
	for _, rows := range [][]string{{`[1,"a"]`, `[2,"b"]`}, {`[3,"c"]`}, {`["not a number","poison"]`}, {`[4,"d"]`}, {`[5,"e"]`, `[6,"f"]`}} {
		ps = append(ps, e.publish(t, rows...))
	}
	return ps
}

func wantIDsOnce(t *testing.T, e *env) {
	t.Helper()
	got := e.ids(t)
	if fmt.Sprint(got) != "[1 2 3 4 5 6]" {
		t.Fatalf("inserted ids %v, want each of 1-6 exactly once", got)
	}
	entries, err := e.q.DLQ().List(t.Context(), "t", "events", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("%d dead-letter entries, want the poison record once: %+v", len(entries), entries)
	}
}

// TestInDoubtBatchIsReinsertedWithSameTokens: the response of an insert that landed is lost, so
// the frames come back in doubt; the writer rebuilds the identical batch (including the
// bisection around a poison record) and re-inserts it with the same tokens, which the table's
// deduplication window drops. Without the tokens the landed half would be there twice.
func TestInDoubtBatchIsReinsertedWithSameTokens(t *testing.T) {
	e := newEnv(t)
	if err := e.s.Exec(t.Context(), e.target, "ALTER TABLE events MODIFY SETTING non_replicated_deduplication_window = 100"); err != nil {
		t.Fatal(err)
	}
	ps := publishBatch(t, e)
	m, _ := NewMetrics(nil)
	runWriter(t, Deps{Consumer: e.q, Store: &lostResponse{Store: e.s}, Targets: e, Metrics: m, Hooks: e.settledHook()})
	e.waitSettled(t, ps...)
	wantIDsOnce(t, e)
	if n := inDoubtCount(t, m, "reinserted_deduplicated"); n != 1 {
		t.Fatalf("in-doubt batches re-inserted with deduplication: %v, want 1", n)
	}
	// The same rows sent again are new rows: a batch's tokens are its own, so the table's
	// deduplication (by content hash when there is no token) must not drop them.
	e.waitSettled(t, publishBatch(t, e)...)
	if got := e.ids(t); fmt.Sprint(got) != "[1 1 2 2 3 3 4 4 5 5 6 6]" {
		t.Fatalf("after sending the same rows again: ids %v, want each of 1-6 twice", got)
	}
}

// crashingJournal marks plans for real, then takes the queue away before the writer can
// acknowledge: the process "dies" between the mark and the acks.
type crashingJournal struct {
	mq.Journal
	die func()
}

func (c crashingJournal) MarkInserted(ctx context.Context, p mq.BatchPlan, failed []mq.FailedRecord) error {
	err := c.Journal.MarkInserted(ctx, p, failed)
	c.die()
	return err
}

// TestCrashAfterMarkAcksWithoutInserting: after a crash between the mark and the acks, the
// restarted writer acknowledges the redelivered frames without inserting them and dead-letters
// the failed record the plan recorded — on a table that does not deduplicate, so a second insert
// would show.
func TestCrashAfterMarkAcksWithoutInserting(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	open := func() *embeddedmq.Queue {
		q, err := embeddedmq.New(embeddedmq.Config{Dir: dir, Partitions: 2, AckWait: time.Second}, embeddedmq.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close(context.Background()) })
		return q
	}
	first := open()
	e.q = first
	ps := publishBatch(t, e)
	var once sync.Once
	died := make(chan struct{})
	m1, _ := NewMetrics(nil)
	stop := runWriter(t, Deps{Consumer: first, Store: e.s, Targets: e, Metrics: m1,
		Journal: crashingJournal{Journal: first, die: func() {
			once.Do(func() { _ = first.Close(context.Background()); close(died) })
		}}})
	select {
	case <-died:
	case <-time.After(30 * time.Second):
		t.Fatal("the batch was not marked within 30s")
	}
	stop()
	if got := e.ids(t); fmt.Sprint(got) != "[1 2 3 4 5 6]" {
		t.Fatalf("before the restart: ids %v, want 1-6 inserted once", got)
	}

	e.q = open()
	m2, _ := NewMetrics(nil)
	runWriter(t, Deps{Consumer: e.q, Store: e.s, Targets: e, Metrics: m2, Hooks: e.settledHook()})
	e.waitSettled(t, ps...)
	wantIDsOnce(t, e)
	if n := inDoubtCount(t, m2, "already_inserted"); n != float64(len(ps)) {
		t.Fatalf("frames acknowledged as already inserted: %v, want %d", n, len(ps))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.dead[ps[2]] {
		t.Fatal("the poison record recorded in the plan was not dead-lettered after the restart")
	}
}
