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
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
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
	poll.Until(t, 5*time.Second, "the first read started", func() bool { return r.reads.Load() > 0 })
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
	poll.Until(t, 5*time.Second, "the read started", func() bool { return r.reads.Load() > 0 })
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
	clk.Add(time.Second) // the schema served while unreachable is kept until the next retry
	if _, err := c.Columns(context.Background(), tgt, "ev"); !errors.Is(err, store.ErrUnknownTable) {
		t.Fatalf("dropped table: %v, want ErrUnknownTable", err)
	}
}

// memBacking is a Backing in memory, counting saves (the queue's bucket is proven by the mq
// conformance suite; this tests what the cache does with it).
type memBacking struct {
	mu    sync.Mutex
	kept  map[string][]byte
	saves int
	fail  error
}

func (b *memBacking) Save(_ context.Context, target store.Target, table string, schema []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return b.fail
	}
	b.saves++
	b.kept[target.Tenant+"/"+target.Database+"/"+table] = append([]byte(nil), schema...)
	return nil
}

func (b *memBacking) Load(_ context.Context, target store.Target, table string) ([]byte, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return nil, false, b.fail
	}
	v, ok := b.kept[target.Tenant+"/"+target.Database+"/"+table]
	return v, ok, nil
}

func (b *memBacking) savesN() int { b.mu.Lock(); defer b.mu.Unlock(); return b.saves }

func (r *countingReader) setFail(err error) {
	r.mu.Lock()
	r.fail = err
	r.mu.Unlock()
}

// TestBackingServesANewProcessWhileUnreachable is the boot-during-an-outage case: one process
// reads a schema (written through to the backing); a second process starting while the server is
// unreachable validates with it, types parsed; a table nobody read stays a transient error; a
// definite answer from the server is never replaced by the kept schema.
func TestBackingServesANewProcessWhileUnreachable(t *testing.T) {
	ctx := t.Context()
	r := &countingReader{cols: map[string][]store.Column{}}
	r.set("acme/db/ev", store.NewColumn("id", "UInt64", "", ""), store.NewColumn("note", "Nullable(String)", "DEFAULT", "''"))
	b := &memBacking{kept: map[string][]byte{}}
	first := New(r, Options{Backing: b})
	if _, err := first.Columns(ctx, tgt, "ev"); err != nil {
		t.Fatal(err)
	}
	if b.savesN() != 1 {
		t.Fatalf("saves after a read = %d, want 1 (write-through)", b.savesN())
	}

	r.setFail(store.ErrUnavailable)
	clk := &clock{t: time.Unix(1000, 0)}
	second := New(r, Options{Backing: b, Now: clk.Now})
	cols, err := second.Columns(ctx, tgt, "ev")
	if err != nil || len(cols) != 2 {
		t.Fatalf("new process while unreachable: %v, %v; want the kept schema", cols, err)
	}
	if cols[0].Name != "id" || cols[0].TypeName != "UInt64" || cols[0].Type == nil || cols[1].Required() || !cols[1].Nullable() || cols[1].DefaultExpr != "''" {
		t.Fatalf("kept schema rebuilt as %+v", cols)
	}
	if _, err := second.Columns(ctx, tgt, "never"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a table never read, while unreachable: %v, want ErrUnavailable (retry later, not unknown)", err)
	}

	// While unreachable, the server is tried again only after Retry.
	reads := r.reads.Load()
	if _, err := second.Columns(ctx, tgt, "ev"); err != nil || r.reads.Load() != reads {
		t.Fatalf("within Retry: %v, %d reads (want %d)", err, r.reads.Load(), reads)
	}
	clk.Add(2 * time.Second)
	if _, err := second.Columns(ctx, tgt, "ev"); err != nil || r.reads.Load() != reads+1 {
		t.Fatalf("after Retry: %v, %d reads (want %d)", err, r.reads.Load(), reads+1)
	}

	// Back up, the table is gone: the server's answer wins over the kept schema.
	r.mu.Lock()
	r.fail = nil
	delete(r.cols, "acme/db/ev")
	r.mu.Unlock()
	clk.Add(2 * time.Second)
	if _, err := second.Columns(ctx, tgt, "ev"); !errors.Is(err, store.ErrUnknownTable) {
		t.Fatalf("dropped table after the outage: %v, want ErrUnknownTable", err)
	}
	if _, err := New(r, Options{Backing: b}).Columns(ctx, tgt, "ev"); !errors.Is(err, store.ErrUnknownTable) {
		t.Fatalf("dropped table, new process: %v, want ErrUnknownTable", err)
	}
}

// TestBackingWritesOncePerMaxAge: refreshes of an unchanged schema cost one write per MaxAge; a
// changed schema is written at once; a failing backing never fails the read.
func TestBackingWritesOncePerMaxAge(t *testing.T) {
	ctx := t.Context()
	r := &countingReader{cols: map[string][]store.Column{}}
	r.set("acme/db/ev", store.NewColumn("id", "UInt64", "", ""))
	b := &memBacking{kept: map[string][]byte{}}
	clk := &clock{t: time.Unix(1000, 0)}
	c := New(r, Options{Backing: b, Now: clk.Now, MaxAge: time.Minute})
	for range 5 {
		if _, err := c.Refresh(ctx, tgt, "ev"); err != nil {
			t.Fatal(err)
		}
	}
	if n := b.savesN(); n != 1 {
		t.Fatalf("saves after 5 refreshes of one schema = %d, want 1", n)
	}
	r.set("acme/db/ev", store.NewColumn("id", "UInt64", "", ""), store.NewColumn("x", "String", "", ""))
	if _, err := c.Refresh(ctx, tgt, "ev"); err != nil {
		t.Fatal(err)
	}
	if n := b.savesN(); n != 2 {
		t.Fatalf("saves after a schema change = %d, want 2", n)
	}
	clk.Add(2 * time.Minute)
	if _, err := c.Columns(ctx, tgt, "ev"); err != nil {
		t.Fatal(err)
	}
	if n := b.savesN(); n != 3 {
		t.Fatalf("saves after MaxAge = %d, want 3", n)
	}
	b.mu.Lock()
	b.fail = errors.New("queue down")
	b.mu.Unlock()
	clk.Add(2 * time.Minute)
	if cols, err := c.Columns(ctx, tgt, "ev"); err != nil || len(cols) != 2 {
		t.Fatalf("read with a failing backing: %v %v", cols, err)
	}
}

// TestRefreshWhileUnreachableKeepsTheEntry: a refresh that fails transiently (a request naming
// an unknown field during an outage) must not drop the schema validation is using.
func TestRefreshWhileUnreachableKeepsTheEntry(t *testing.T) {
	ctx := t.Context()
	r := &countingReader{cols: map[string][]store.Column{}}
	r.set("acme/db/ev", store.NewColumn("id", "UInt64", "", ""))
	c := New(r, Options{})
	if _, err := c.Columns(ctx, tgt, "ev"); err != nil {
		t.Fatal(err)
	}
	r.setFail(store.ErrUnavailable)
	if _, err := c.Refresh(ctx, tgt, "ev"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Refresh while unreachable: %v", err)
	}
	if cols, err := c.Columns(ctx, tgt, "ev"); err != nil || len(cols) != 1 {
		t.Fatalf("Columns after a failed refresh: %v %v, want the schema held before", cols, err)
	}
	r.setFail(store.ErrUnknownTable)
	if _, err := c.Refresh(ctx, tgt, "ev"); !errors.Is(err, store.ErrUnknownTable) {
		t.Fatal(err)
	}
	r.setFail(store.ErrUnavailable)
	if _, err := c.Columns(ctx, tgt, "ev"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("after the server said the table is gone: %v, want the entry dropped", err)
	}
}

func TestEncodeDecode(t *testing.T) {
	cols := []store.Column{store.NewColumn("a", "Array(LowCardinality(String))", "", ""), store.NewColumn("m", "UInt8", "MATERIALIZED", "1")}
	b, err := Encode(cols)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil || len(got) != 2 || got[0].TypeName != cols[0].TypeName || got[0].Type.String() != cols[0].Type.String() || got[1].Writable() {
		t.Fatalf("Decode(Encode) = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "{}", `{"v":2,"columns":[{"name":"a","type":"UInt8"}]}`, `{"v":1,"columns":[]}`} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%q) succeeded", bad)
		}
	}
}
