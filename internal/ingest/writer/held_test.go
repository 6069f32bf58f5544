package writer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// gatedStore blocks every insert until open is closed: a ClickHouse that does not answer.
type gatedStore struct {
	store.Inserter
	started chan struct{}
	open    chan struct{}
	once    sync.Once
}

func (s *gatedStore) release() { s.once.Do(func() { close(s.open) }) }

func (s *gatedStore) Insert(ctx context.Context, b store.Batch) error {
	select {
	case s.started <- struct{}{}:
	default:
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.open:
	}
	return s.Inserter.Insert(ctx, b)
}

// TestHeldBytesAreBoundedByDefault: with MaxBuffered left at its default (MaxBytes / 2 per
// partition) and inserts that do not return, the writer stops pulling a partition once the
// frames it holds from it reach the bound: a backlog stays in the queue, not in memory. Once
// inserts return, every row lands once.
func TestHeldBytesAreBoundedByDefault(t *testing.T) {
	e := newEnv(t)
	gate := &gatedStore{Inserter: e.s, started: make(chan struct{}, 1), open: make(chan struct{})}
	cfg := DefaultConfig()
	cfg.MaxBytes = 8 << 10
	cfg.MaxWait, cfg.FetchWait, cfg.FetchBatch = 20*time.Millisecond, 20*time.Millisecond, 1
	w, err := New(cfg, Deps{Consumer: e.q, Store: gate, Targets: e, Hooks: e.settledHook()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = w.Run(ctx); close(stopped) }()
	t.Cleanup(func() { gate.release(); cancel(); <-stopped })

	name := strings.Repeat("u", 1000) // one ~1 KiB frame per publish
	var ps []mq.Position
	for i := range 64 {
		ps = append(ps, e.publish(t, fmt.Sprintf(`[%d,%q]`, i+1, name)))
	}
	<-gate.started
	// Pulling stops on its own: held bytes stop changing while the insert hangs.
	var last string
	poll.Until(t, 10*time.Second, "the held bytes to stop changing", func() bool {
		time.Sleep(200 * time.Millisecond)
		w.held.mu.Lock()
		now := fmt.Sprint(w.held.bytes, len(w.held.frames))
		w.held.mu.Unlock()
		same := now == last
		last = now
		return same
	})
	bound := cfg.MaxBytes / 2
	w.held.mu.Lock()
	frames, perPartition := len(w.held.frames), map[int]int{}
	for p, n := range w.held.bytes {
		perPartition[p] = n
	}
	w.held.mu.Unlock()
	for p, n := range perPartition {
		// The pull that crosses the bound is let through, so one frame (FetchBatch 1) over it.
		if n > bound+1100 {
			t.Errorf("partition %d holds %d bytes, want at most %d plus one frame", p, n, bound)
		}
	}
	if frames >= len(ps) {
		t.Fatalf("the writer holds all %d frames: pulling was not bounded", frames)
	}
	t.Logf("held while the insert hangs: %d of %d frames, bytes per partition %v (bound %d)", frames, len(ps), perPartition, bound)

	gate.release()
	e.waitSettled(t, ps...)
	ids := e.ids(t)
	if len(ids) != len(ps) {
		t.Fatalf("%d rows landed, want %d once each", len(ids), len(ps))
	}
	for i, id := range ids {
		if id != uint64(i+1) {
			t.Fatalf("ids %v, want 1..%d once each", ids, len(ps))
		}
	}
}
