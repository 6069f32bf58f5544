package writer

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/ingest/payload/payloadtest"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/chdbstore"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// env is a writer over the real embedded queue and the embedded engine.
type env struct {
	q      *embeddedmq.Queue
	s      *chdbstore.Store
	target store.Target
	mu     sync.Mutex
	dead   map[mq.Position]bool
	done   map[mq.Position]bool
	// metrics are the writer's (nil: unregistered).
	metrics *Metrics
}

func (e *env) Target(string) (store.Target, error) { return e.target, nil }

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, embeddedmq.Deps{}, nil)
}

// newEnvWith is newEnv with the queue's deps and the writer's metrics (nil: unregistered).
func newEnvWith(t *testing.T, qdeps embeddedmq.Deps, m *Metrics) *env {
	t.Helper()
	s, err := chdbstore.New(chdbstore.Config{Path: t.TempDir(), LibPath: testsvc.CHDBLib(t)}, chdbstore.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	q, err := embeddedmq.New(embeddedmq.Config{Dir: t.TempDir(), Partitions: 2}, qdeps)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	e := &env{q: q, s: s, metrics: m, target: store.Target{Tenant: "t", Database: "default"}, dead: map[mq.Position]bool{}, done: map[mq.Position]bool{}}
	if err := s.Exec(t.Context(), e.target, "CREATE TABLE events (id UInt64, user String) ENGINE = MergeTree ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	return e
}

// run starts a writer with a short flush wait until the test ends.
func (e *env) run(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxWait = 50 * time.Millisecond
	cfg.FetchWait = 50 * time.Millisecond
	w, err := New(cfg, Deps{Consumer: e.q, Store: e.s, Targets: e, Metrics: e.metrics, Hooks: Hooks{Settled: func(_, _ string, p mq.Position, dead bool) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.done[p] = true
		e.dead[p] = dead
	}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = w.Run(ctx); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })
}

// publish queues rows of events (id UInt64, user String) as one record in the current payload
// format (RowBinary). Rows that do not validate — the poison records of the tests — cannot be
// written as RowBinary; their record is queued in the version 1 format of earlier releases,
// whose canonical JSON the server then refuses.
func (e *env) publish(t *testing.T, rows ...string) mq.Position {
	t.Helper()
	seg, err := payloadtest.Binary([]string{"id", "user"}, []string{"UInt64", "String"}, rows...)
	if err != nil {
		return e.publishV1(t, rows...)
	}
	b, err := payload.Encode([]payload.Segment{seg})
	if err != nil {
		t.Fatal(err)
	}
	return e.publishPayload(t, b)
}

// publishV1 queues rows as one record in the version 1 (canonical JSON) format, as the release
// before payload version 2 wrote it.
func (e *env) publishV1(t *testing.T, rows ...string) mq.Position {
	t.Helper()
	seg := payload.Segment{Columns: []string{"id", "user"}}
	for _, r := range rows {
		seg.Rows = append(seg.Rows, []byte(r))
	}
	b, err := payloadtest.EncodeV1([]payload.Segment{seg})
	if err != nil {
		t.Fatal(err)
	}
	return e.publishPayload(t, b)
}

func (e *env) publishPayload(t *testing.T, b []byte) mq.Position {
	t.Helper()
	res, err := e.q.Publish(t.Context(), mq.Record{Tenant: "t", Table: "events", Payload: b})
	if err != nil {
		t.Fatal(err)
	}
	return res.Position
}

func (e *env) waitSettled(t *testing.T, ps ...mq.Position) {
	t.Helper()
	poll.Until(t, 30*time.Second, fmt.Sprintf("%d records settled", len(ps)), func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, p := range ps {
			if !e.done[p] {
				return false
			}
		}
		return true
	})
}

func (e *env) ids(t *testing.T) []uint64 {
	t.Helper()
	rows, err := e.s.Query(t.Context(), e.target, store.Query{SQL: "SELECT id FROM events ORDER BY id"})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []uint64
	for rows.Next() {
		var r [1]uint64
		if err := json.Unmarshal(rows.Row(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r[0])
	}
	return out
}

func TestPoisonRecordIsIsolatedAndDeadLettered(t *testing.T) {
	e := newEnv(t)
	// Publish before the writer runs so the records share one batch.
	var ps []mq.Position
	for _, rows := range [][]string{{`[1,"a"]`, `[2,"b"]`}, {`[3,"c"]`}, {`["not a number","poison"]`}, {`[4,"d"]`}, {`[5,"e"]`, `[6,"f"]`}} {
		ps = append(ps, e.publish(t, rows...))
	}
	e.run(t)
	e.waitSettled(t, ps...)
	got := e.ids(t)
	want := []uint64{1, 2, 3, 4, 5, 6}
	if len(got) != len(want) {
		t.Fatalf("inserted ids %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("inserted ids %v, want %v", got, want)
		}
	}
	e.mu.Lock()
	for i, p := range ps {
		if e.dead[p] != (i == 2) {
			t.Errorf("record %d (%s) dead-lettered = %v", i, p, e.dead[p])
		}
	}
	e.mu.Unlock()
	entries, err := e.q.DLQ().List(t.Context(), "t", "events", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Record.Position != ps[2] || entries[0].Reason.Code == "" || entries[0].Reason.Message == "" {
		t.Fatalf("DLQ entries %+v, want only the poison record with its reason", entries)
	}
	st, err := e.q.Stats(t.Context(), "t", "events")
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 0 {
		t.Fatalf("%d frames still pending after settlement", st.Pending)
	}
}

func TestMissingTableDeadLettersWithoutBisectingAndReplayDelivers(t *testing.T) {
	e := newEnv(t)
	if err := e.s.Exec(t.Context(), e.target, "DROP TABLE events"); err != nil {
		t.Fatal(err)
	}
	p := e.publish(t, `[7,"g"]`)
	e.run(t)
	e.waitSettled(t, p)
	n, err := e.q.DLQ().Counts(t.Context(), "t")
	if err != nil || n[mq.TableKey{Tenant: "t", Table: "events"}] != 1 {
		t.Fatalf("DLQ counts %v %v", n, err)
	}
	entries, _ := e.q.DLQ().List(t.Context(), "t", "events", 0, 10)
	if len(entries) != 1 || entries[0].Reason.Code != "unknown_table" {
		t.Fatalf("entries %+v", entries)
	}
	// Fix the table, replay: the row arrives.
	if err := e.s.Exec(t.Context(), e.target, "CREATE TABLE events (id UInt64, user String) ENGINE = MergeTree ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.DLQ().Replay(t.Context(), "t", "events", 10); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "the replayed row inserted", func() bool { return len(e.ids(t)) == 1 })
}

func TestBackoffGrowsAndIsBounded(t *testing.T) {
	for attempt := 1; attempt < 20; attempt++ {
		d := backoff(100*time.Millisecond, 2*time.Second, attempt)
		lo := min64(100*time.Millisecond<<min(attempt-1, 10), 2*time.Second)
		if d < time.Duration(float64(lo)*0.8) || d > time.Duration(float64(lo)*1.2) {
			t.Fatalf("attempt %d: %v outside ±20%% of %v", attempt, d, lo)
		}
	}
}
