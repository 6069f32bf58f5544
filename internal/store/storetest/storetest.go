// Package storetest is the conformance suite of the store layer. Every backend runs it from its
// own conformance_test.go against a real engine:
//
//	storetest.Run(t, func(t *testing.T) *storetest.Harness { return &storetest.Harness{Store: s} }, caps)
//
// Each case creates its own uniquely named database (dropped at cleanup), so the suite can run
// against a shared server.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/store"
)

// Harness gives the suite a store to test.
type Harness struct {
	// Store is the store under test. It may be shared between cases; the suite never closes it.
	Store store.Store
	// Unreachable, when non-nil, returns a store whose engine cannot be reached (a server
	// address nobody listens on). The suite closes it.
	Unreachable func(t *testing.T) store.Store
	// NewStore, when non-nil, returns a fresh store the suite may Close (for the Close case).
	NewStore func(t *testing.T) store.Store
}

// Caps are the capabilities of the engine under test.
type Caps struct {
	// ModernTypes: DateTime64, Date32, Bool, Map, JSON, IPv4/IPv6, Int128.
	ModernTypes bool
}

// Run runs every case of the suite as a subtest of t.
func Run(t *testing.T, newHarness func(t *testing.T) *Harness, caps Caps) {
	cases := []struct {
		name string
		fn   func(t *testing.T, h *Harness, caps Caps)
	}{
		{"SchemaCommonTypes", testSchemaCommonTypes},
		{"SchemaModernTypes", testSchemaModernTypes},
		{"UnknownTableAndDatabase", testUnknown},
		{"InsertReadBack", bothEncodings(testInsertReadBack)},
		{"InsertModernTypesReadBack", bothEncodings(testInsertModernReadBack)},
		{"InsertDefaults", bothEncodings(testInsertDefaults)},
		{"InsertTypeErrorRejectsWholeBatch", testInsertRejected},
		{"InsertRowBinaryMismatchRejectsWholeBatch", testInsertRowBinaryRejected},
		{"InsertRowBinaryAnyBytes", testInsertRowBinaryAnyBytes},
		{"InsertRowBinaryTypeChanged", testInsertRowBinaryTypeChanged},
		{"InsertUnknownColumn", bothEncodings(testInsertUnknownColumn)},
		{"QueryStreamsColumnsAndStats", testQueryStreams},
		{"QueryLimitRows", testLimitRows},
		{"QueryLimitTime", testLimitTime},
		{"QueryReadOnlyRefusesWrites", testReadOnly},
		{"QueryParametersAreData", testParams},
		{"QuerySyntaxErrorRejected", testSyntaxError},
		{"ContextCancelStopsQuery", testCancel},
		{"UnreachableIsUnavailable", testUnreachable},
		{"ConcurrentInsertsAndQueries", testConcurrent},
		{"CloseThenErrClosed", testClose},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, newHarness(t), caps)
		})
	}
}

// database creates a uniquely named database and drops it at cleanup.
func database(t *testing.T, s store.Store) store.Target {
	t.Helper()
	var b [5]byte
	_, _ = rand.Read(b[:])
	name := "storetest_" + hex.EncodeToString(b[:])
	def := store.Target{Database: "default"}
	if err := s.Exec(t.Context(), def, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Exec(ctx, def, "DROP DATABASE IF EXISTS "+name); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return store.Target{Tenant: "t_" + name, Database: name}
}

// exec runs DDL and fails the test on error.
func exec(t *testing.T, s store.Store, target store.Target, sql string) {
	t.Helper()
	if err := s.Exec(t.Context(), target, sql); err != nil {
		t.Fatalf("exec %q: %v", sql, err)
	}
}

// queryAll runs q and returns the canonical rows as strings.
func queryAll(t *testing.T, s store.Store, target store.Target, q store.Query) ([]string, error) {
	t.Helper()
	rows, err := s.Query(t.Context(), target, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		out = append(out, string(rows.Row()))
	}
	return out, rows.Err()
}

func mustQuery(t *testing.T, s store.Store, target store.Target, sql string) []string {
	t.Helper()
	out, err := queryAll(t, s, target, store.Query{SQL: sql})
	if err != nil {
		t.Fatalf("query %q: %v", sql, err)
	}
	return out
}

func count(t *testing.T, s store.Store, target store.Target, table string) string {
	t.Helper()
	rows := mustQuery(t, s, target, fmt.Sprintf("SELECT count() FROM %s.%s", target.Database, table))
	if len(rows) != 1 {
		t.Fatalf("count: %v", rows)
	}
	return strings.Trim(rows[0], "[]\"")
}

func wantErr(t *testing.T, what string, err error, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: got error %v, want %v", what, err, sentinel)
	}
}

func rowsOf(rows ...string) [][]byte {
	out := make([][]byte, len(rows))
	for i, r := range rows {
		out[i] = []byte(r)
	}
	return out
}

func equalRows(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d:\ngot  %s\nwant %s", len(got), len(want), strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("row %d:\ngot  %s\nwant %s", i, got[i], want[i])
		}
	}
}
