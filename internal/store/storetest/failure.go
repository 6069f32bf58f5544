package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/store"
)

func testCancel(t *testing.T, h *Harness, _ Caps) {
	s := h.Store
	target := database(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rows, err := s.Query(ctx, target, store.Query{SQL: "SELECT number FROM system.numbers"})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for i := 0; i < 10 && rows.Next(); i++ {
	}
	start := time.Now()
	cancel()
	n := 0
	for rows.Next() {
		n++
		if time.Since(start) > 20*time.Second {
			t.Fatalf("query still streaming %v after cancel (%d rows)", time.Since(start), n)
		}
	}
	if err := rows.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err after cancel = %v, want context.Canceled", err)
	}
	// The store stays usable.
	if got := mustQuery(t, s, target, "SELECT 1"); len(got) != 1 {
		t.Fatalf("query after cancel: %v", got)
	}
}

func testUnreachable(t *testing.T, h *Harness, _ Caps) {
	if h.Unreachable == nil {
		t.Log("embedded engine: no server to be unreachable")
		return
	}
	s := h.Unreachable(t)
	defer s.Close(context.Background())
	target := store.Target{Database: "default"}
	start := time.Now()
	err := s.Ping(t.Context(), target)
	wantErr(t, "Ping", err, store.ErrUnavailable)
	_, err = s.Columns(t.Context(), target, "t")
	wantErr(t, "Columns", err, store.ErrUnavailable)
	err = s.Insert(t.Context(), store.Batch{Target: target, Table: "t", Columns: []string{"a"}, Rows: rowsOf(`[1]`)})
	wantErr(t, "Insert", err, store.ErrUnavailable)
	if !store.IsTransient(err) {
		t.Error("unavailable must be transient")
	}
	_, err = s.Query(t.Context(), target, store.Query{SQL: "SELECT 1"})
	wantErr(t, "Query", err, store.ErrUnavailable)
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("four calls to an unreachable server took %v", d)
	}
}

func testConcurrent(t *testing.T, h *Harness, _ Caps) {
	s := h.Store
	target := database(t, s)
	exec(t, s, target, sprintf("CREATE TABLE %s.t (w UInt8, i UInt32, s String) ENGINE = MergeTree ORDER BY (w, i)", target.Database))
	const writers, batches, perBatch = 4, 5, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				rows := make([][]byte, perBatch)
				for i := range rows {
					rows[i] = []byte(sprintf(`[%d,%d,"w%d b%d"]`, w, b*perBatch+i, w, b))
				}
				if err := s.Insert(t.Context(), store.Batch{Target: target, Table: "t", Columns: []string{"w", "i", "s"}, Rows: rows}); err != nil {
					t.Errorf("writer %d batch %d: %v", w, b, err)
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 10 {
				if _, err := queryAll(t, s, target, store.Query{SQL: sprintf("SELECT w, count() FROM %s.t GROUP BY w", target.Database)}); err != nil {
					t.Errorf("reader: %v", err)
					return
				}
				if _, err := s.Columns(t.Context(), target, "t"); err != nil {
					t.Errorf("schema reader: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := count(t, s, target, "t"); n != sprintf("%d", writers*batches*perBatch) {
		t.Fatalf("count %s, want %d", n, writers*batches*perBatch)
	}
}

func testClose(t *testing.T, h *Harness, _ Caps) {
	if h.NewStore == nil {
		t.Log("backend gives no closable store to the suite")
		return
	}
	s := h.NewStore(t)
	target := store.Target{Database: "default"}
	if err := s.Ping(t.Context(), target); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	wantErr(t, "Ping after Close", s.Ping(t.Context(), target), store.ErrClosed)
	_, err := s.Query(t.Context(), target, store.Query{SQL: "SELECT 1"})
	wantErr(t, "Query after Close", err, store.ErrClosed)
	wantErr(t, "Insert after Close", s.Insert(t.Context(), store.Batch{Target: target, Table: "t", Columns: []string{"a"}, Rows: rowsOf(`[1]`)}), store.ErrClosed)
}
