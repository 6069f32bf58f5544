package chdbstore_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/chdbstore"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestMemoryBound proves that store.chdb.max_memory_bytes reaches the engine: it reports the
// bound and the caches sized from it, an insert of a default flush (16 MiB) still succeeds at
// the smallest bound accepted, and a statement that needs more memory than the bound fails with
// the engine's memory-limit error instead of growing the process.
func TestMemoryBound(t *testing.T) {
	const bound = 128 << 20
	s, err := chdbstore.New(chdbstore.Config{Path: filepath.Join(t.TempDir(), "chdb"), LibPath: testsvc.CHDBLib(t),
		MaxMemoryBytes: bound}, chdbstore.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	tg := store.Target{Database: "default"}
	got, err := s.QueryFormat(t.Context(), tg, "SELECT name, value FROM system.server_settings WHERE name IN "+
		"('max_server_memory_usage', 'mark_cache_size', 'index_mark_cache_size', 'primary_index_cache_size') ORDER BY name", "TSV")
	if err != nil {
		t.Fatal(err)
	}
	want := "index_mark_cache_size\t16777216\nmark_cache_size\t16777216\nmax_server_memory_usage\t134217728\nprimary_index_cache_size\t16777216\n"
	if string(got) != want {
		t.Fatalf("engine settings:\n%s\nwant:\n%s", got, want)
	}
	if err := s.Exec(t.Context(), tg, "CREATE TABLE mem (id UInt64, s String) ENGINE = MergeTree ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	// 160,000 rows of 8 + 101 bytes: a little over 16 MiB, the default ingest.flush.max_bytes.
	if err := s.Exec(t.Context(), tg, "INSERT INTO mem SELECT number, repeat('x', 100) FROM numbers(160000)"); err != nil {
		t.Fatalf("a 16 MiB insert under a %d-byte bound: %v", bound, err)
	}
	// groupArray of 100M UInt64 holds 800 MB at once.
	_, err = s.QueryFormat(t.Context(), tg, "SELECT length(groupArray(number)) FROM numbers(100000000)", "TSV")
	if err == nil || !strings.Contains(err.Error(), "memory limit exceeded") {
		t.Fatalf("a query needing 800 MB under a %d-byte bound: %v, want the memory-limit error", bound, err)
	}
}

func TestMaxMemoryBytesValidated(t *testing.T) {
	for _, m := range []int64{1, 64 << 20, -2} {
		err := chdbstore.Config{Path: "x", MaxMemoryBytes: m}.Validate()
		if err == nil || !strings.Contains(err.Error(), "store.chdb.max_memory_bytes") {
			t.Errorf("max_memory_bytes %d: %v, want an error naming store.chdb.max_memory_bytes", m, err)
		}
	}
	for _, m := range []int64{0, -1, 128 << 20, 4 << 30} {
		if err := (chdbstore.Config{Path: "x", MaxMemoryBytes: m}).Validate(); err != nil {
			t.Errorf("max_memory_bytes %d: %v", m, err)
		}
	}
}
