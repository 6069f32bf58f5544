package schemacache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wavehouse/wavehouse/internal/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// countingReader is a SchemaReader whose schema the test changes, counting reads.
type countingReader struct {
	mu    sync.Mutex
	cols  map[string][]store.Column
	reads atomic.Int64
	gate  chan struct{}
	fail  error
}

func (r *countingReader) Columns(_ context.Context, target store.Target, table string) ([]store.Column, error) {
	r.reads.Add(1)
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return nil, r.fail
	}
	cols, ok := r.cols[target.Tenant+"/"+target.Database+"/"+table]
	if !ok {
		return nil, store.ErrUnknownTable
	}
	return cols, nil
}

func (r *countingReader) set(key string, cols ...store.Column) {
	r.mu.Lock()
	r.cols[key] = cols
	r.mu.Unlock()
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var tgt = store.Target{Tenant: "acme", Database: "db"}

func TestHitMissInvalidateAndAge(t *testing.T) {
	r := &countingReader{cols: map[string][]store.Column{}}
	r.set("acme/db/t", store.NewColumn("a", "String", "", ""))
	clk := &clock{t: time.Unix(1000, 0)}
	c := New(r, Options{MaxAge: time.Minute, Now: clk.Now})
	ctx := t.Context()

	for range 3 {
		cols, err := c.Columns(ctx, tgt, "t")
		if err != nil || len(cols) != 1 {
			t.Fatalf("Columns = %v, %v", cols, err)
		}
	}
	if n := r.reads.Load(); n != 1 {
		t.Fatalf("reads = %d, want 1 (cached)", n)
	}

	r.set("acme/db/t", store.NewColumn("a", "String", "", ""), store.NewColumn("b", "UInt8", "", ""))
	c.Invalidate(tgt, "t")
	cols, _ := c.Columns(ctx, tgt, "t")
	if len(cols) != 2 || r.reads.Load() != 2 {
		t.Fatalf("after Invalidate: %d cols, %d reads", len(cols), r.reads.Load())
	}

	r.set("acme/db/t", store.NewColumn("a", "String", "", ""))
	clk.Add(59 * time.Second)
	if cols, _ := c.Columns(ctx, tgt, "t"); len(cols) != 2 {
		t.Fatal("entry re-read before MaxAge")
	}
	clk.Add(2 * time.Second)
	if cols, _ := c.Columns(ctx, tgt, "t"); len(cols) != 1 {
		t.Fatal("entry not re-read after MaxAge")
	}

	// Other tenants with the same database and table name are separate entries.
	if _, err := c.Columns(ctx, store.Target{Tenant: "other", Database: "db"}, "t"); !errors.Is(err, store.ErrUnknownTable) {
		t.Fatalf("other tenant: %v, want ErrUnknownTable", err)
	}
}

func TestMissIsNotCached(t *testing.T) {
	r := &countingReader{cols: map[string][]store.Column{}}
	c := New(r, Options{})
	if _, err := c.Columns(t.Context(), tgt, "t"); !errors.Is(err, store.ErrUnknownTable) {
		t.Fatalf("got %v", err)
	}
	r.set("acme/db/t", store.NewColumn("a", "String", "", ""))
	if cols, err := c.Columns(t.Context(), tgt, "t"); err != nil || len(cols) != 1 {
		t.Fatalf("table created after a miss not found: %v %v", cols, err)
	}
}

func TestConcurrentMissesShareOneRead(t *testing.T) {
	r := &countingReader{cols: map[string][]store.Column{}, gate: make(chan struct{})}
	r.set("acme/db/t", store.NewColumn("a", "String", "", ""))
	c := New(r, Options{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := c.Columns(t.Context(), tgt, "t"); err != nil {
				t.Error(err)
			}
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for r.reads.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polling for the first read to start, not synchronising on time
	}
	close(r.gate)
	wg.Wait()
	if n := r.reads.Load(); n != 1 {
		t.Fatalf("reads = %d, want 1", n)
	}
}

func TestInvalidateDuringReadIsNotCached(t *testing.T) {
	r := &countingReader{cols: map[string][]store.Column{}, gate: make(chan struct{})}
	r.set("acme/db/t", store.NewColumn("a", "String", "", ""))
	c := New(r, Options{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.Columns(context.Background(), tgt, "t")
	}()
	deadline := time.Now().Add(5 * time.Second)
	for r.reads.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	c.Invalidate(tgt, "t")
	close(r.gate)
	<-done
	r.gate = nil
	_, _ = c.Columns(t.Context(), tgt, "t")
	if n := r.reads.Load(); n != 2 {
		t.Fatalf("reads = %d, want 2 (stale read must not be cached)", n)
	}
}

// TestStaleServedWhileServerUnreachable serves an aged entry while re-reading it fails
// transiently, but never serves stale data for a definite answer (the table is gone) and never
// invents a schema on a miss.
func TestStaleServedWhileServerUnreachable(t *testing.T) {
	r := &countingReader{cols: map[string][]store.Column{}}
	clk := &clock{t: time.Unix(1000, 0)}
	c := New(r, Options{MaxAge: time.Minute, Now: clk.Now})
	r.set("acme/db/ev", store.Column{Name: "id"})
	if _, err := c.Columns(context.Background(), tgt, "ev"); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * time.Minute)
	r.mu.Lock()
	r.fail = store.ErrUnavailable
	r.mu.Unlock()
	cols, err := c.Columns(context.Background(), tgt, "ev")
	if err != nil || len(cols) != 1 || cols[0].Name != "id" {
		t.Fatalf("aged entry while unreachable: %v %v, want the last schema", cols, err)
	}
	if _, err := c.Columns(context.Background(), tgt, "other"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("miss while unreachable: %v, want ErrUnavailable", err)
	}
	r.mu.Lock()
	r.fail = nil
	delete(r.cols, "acme/db/ev")
	r.mu.Unlock()
	if _, err := c.Columns(context.Background(), tgt, "ev"); !errors.Is(err, store.ErrUnknownTable) {
		t.Fatalf("dropped table: %v, want ErrUnknownTable", err)
	}
}
