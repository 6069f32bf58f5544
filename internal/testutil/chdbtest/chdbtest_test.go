package chdbtest

import (
	"os"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store"
)

// TestEngineOpensOnceAndCloses: every Store call hands out the same open engine; Close closes it
// and removes its directory, and a later Store opens a fresh one.
func TestEngineOpensOnceAndCloses(t *testing.T) {
	var e Engine
	s := e.Store(t)
	if e.Store(t) != s {
		t.Fatal("a second Store opened another engine")
	}
	if err := s.Ping(t.Context(), store.Target{Database: "default"}); err != nil {
		t.Fatal(err)
	}
	dir := e.dir
	e.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("engine directory %s left behind: %v", dir, err)
	}
	e.Close() // idempotent
	s2 := e.Store(t)
	defer e.Close()
	if err := s2.Ping(t.Context(), store.Target{Database: "default"}); err != nil {
		t.Fatalf("reopened engine: %v", err)
	}
}
