package chdbstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/chdbstore"
	"github.com/wavehouse/wavehouse/internal/store/storetest"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// The engine is one per process, so the tests in this package run one after another on one
// store at a time; each suite case isolates itself with its own database.

func newStore(t *testing.T) *chdbstore.Store {
	t.Helper()
	lib := testsvc.CHDBLib(t)
	s, err := chdbstore.New(chdbstore.Config{Path: filepath.Join(t.TempDir(), "chdb"), LibPath: lib}, chdbstore.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	s := newStore(t)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	storetest.Run(t, func(t *testing.T) *storetest.Harness {
		return &storetest.Harness{Store: s}
	}, storetest.Caps{ModernTypes: true})
}

func TestOneEnginePerProcess(t *testing.T) {
	s := newStore(t)
	if _, err := chdbstore.New(chdbstore.Config{Path: t.TempDir(), LibPath: testsvc.CHDBLib(t)}, chdbstore.Deps{}); err == nil {
		t.Fatal("a second store opened while the first holds the engine")
	}
	if err := s.Ping(t.Context(), store.Target{Database: "default"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Ping(t.Context(), store.Target{Database: "default"}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Ping after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Query(t.Context(), store.Target{Database: "default"}, store.Query{SQL: "SELECT 1"}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Query after Close = %v, want ErrClosed", err)
	}
	s2 := newStore(t)
	defer s2.Close(context.Background())
	if err := s2.Ping(t.Context(), store.Target{Database: "default"}); err != nil {
		t.Fatalf("engine did not reopen after Close: %v", err)
	}
}

func TestMissingLibraryIsAClearBootError(t *testing.T) {
	t.Setenv("CHDB_LIB_PATH", "")
	_, err := chdbstore.New(chdbstore.Config{Path: t.TempDir(), LibPath: filepath.Join(t.TempDir(), "nope.so")}, chdbstore.Deps{})
	if err == nil || !strings.Contains(err.Error(), "make run") || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("got %v, want an unavailable error that says how to get libchdb", err)
	}
}
