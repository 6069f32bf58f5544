// Package chdbtest shares one chDB engine among the tests of a package: the engine is one per
// process (chdb.NewSession hands back the open session whatever path it is given), so a test
// package opens it once, isolates its tests by database, and closes it in TestMain.
package chdbtest

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store/chdbstore"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// Engine is a package's chDB engine, opened on first use. The zero value is ready; declare one
// per test package and Close it after m.Run.
type Engine struct {
	mu  sync.Mutex
	s   *chdbstore.Store
	dir string
}

// Store returns the engine, opening it in a temporary directory on the first call (a missing
// libchdb is testsvc.Missing: a skip locally, a failure under CI).
func (e *Engine) Store(t testing.TB) *chdbstore.Store {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.s != nil {
		return e.s
	}
	lib := testsvc.CHDBLib(t)
	dir, err := os.MkdirTemp("", "wh-chdbtest-")
	if err != nil {
		t.Fatal(err)
	}
	s, err := chdbstore.New(chdbstore.Config{Path: dir, LibPath: lib}, chdbstore.Deps{})
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("open chDB: %v", err)
	}
	e.s, e.dir = s, dir
	return s
}

// Close closes the engine, if it was opened, and removes its directory.
func (e *Engine) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.s != nil {
		_ = e.s.Close(context.Background())
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
	}
	e.s, e.dir = nil, ""
}
