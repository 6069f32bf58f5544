package chdbstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/chdbstore"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestSpoolFilesOfAKilledProcessAreRemoved proves that a RowBinary spool file left in the engine
// path by a process killed mid-insert is deleted when the next process starts the engine, and
// that other files there are kept.
func TestSpoolFilesOfAKilledProcessAreRemoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chdb")
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(path, ".insert-123.rowbinary")
	other := filepath.Join(path, "keep.txt")
	for _, f := range []string{left, other} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := chdbstore.New(chdbstore.Config{Path: path, LibPath: testsvc.CHDBLib(t)}, chdbstore.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	if err := s.Exec(t.Context(), store.Target{Database: "default"}, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("spool file %s still there after the engine started (stat err %v)", left, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("a file that is not a spool file was removed: %v", err)
	}
}
