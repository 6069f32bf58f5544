package chdbstore_test

import (
	"context"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestInsertDedupToken proves the token reaches the engine: a repeat of an insert with the same
// token into a table with a deduplication window is dropped, a different token is not, and a
// table without the window is reported as not deduplicating (and keeps the repeat).
func TestInsertDedupToken(t *testing.T) {
	s := newStore(t)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	ctx := t.Context()
	db := testsvc.UniqueName(t, "dedup")
	target := store.Target{Database: db}
	if err := s.Exec(ctx, store.Target{Database: "default"}, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Exec(context.Background(), store.Target{Database: "default"}, "DROP DATABASE IF EXISTS "+db)
	})
	for _, ddl := range []string{
		"CREATE TABLE " + db + ".with_window (n UInt64) ENGINE = MergeTree ORDER BY n SETTINGS non_replicated_deduplication_window = 100",
		"CREATE TABLE " + db + ".without_window (n UInt64) ENGINE = MergeTree ORDER BY n",
	} {
		if err := s.Exec(ctx, target, ddl); err != nil {
			t.Fatal(err)
		}
	}
	caps, err := s.Capabilities(ctx, target)
	if err != nil || !caps.InsertDedupToken {
		t.Fatalf("Capabilities = %+v, %v; want InsertDedupToken", caps, err)
	}
	for table, want := range map[string]bool{"with_window": true, "without_window": false} {
		got, err := s.InsertDeduplicated(ctx, target, table)
		if err != nil || got != want {
			t.Fatalf("InsertDeduplicated(%s) = %v, %v; want %v", table, got, err, want)
		}
	}
	if _, err := s.InsertDeduplicated(ctx, target, "missing"); err == nil {
		t.Fatal("InsertDeduplicated of a missing table: no error")
	}
	insert := func(table, token string, rows ...string) {
		t.Helper()
		b := store.Batch{Target: target, Table: table, Columns: []string{"n"}, DedupToken: token}
		for _, r := range rows {
			b.Rows = append(b.Rows, []byte(r))
		}
		if err := s.Insert(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	insert("with_window", "plan-a/0", "[1]", "[2]")
	insert("with_window", "plan-a/0", "[1]", "[2]") // the retry after a crash: dropped
	insert("with_window", "plan-a/1", "[1]", "[2]") // another statement of the batch: kept
	insert("without_window", "plan-a/0", "[1]", "[2]")
	insert("without_window", "plan-a/0", "[1]", "[2]")
	for table, want := range map[string]string{"with_window": "[4]", "without_window": "[4]"} {
		if got := count(t, s, target, table); got != want {
			t.Fatalf("%s holds %s rows, want %s", table, got, want)
		}
	}
}

func count(t *testing.T, s interface {
	Query(context.Context, store.Target, store.Query) (store.Rows, error)
}, target store.Target, table string) string {
	t.Helper()
	rows, err := s.Query(t.Context(), target, store.Query{SQL: "SELECT count() FROM " + target.Database + "." + table})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatalf("count %s: no row: %v", table, rows.Err())
	}
	return string(rows.Row())
}
