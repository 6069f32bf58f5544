package chclients

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// openHTTP opens clickhouse-go/v2 in HTTP mode against tg with the target's credentials and
// the compression c (nil: none).
func openHTTP(t testing.TB, tg target, c *clickhouse.Compression) driver.Conn {
	t.Helper()
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{tg.hostPort()},
		Protocol:    clickhouse.HTTP,
		Auth:        clickhouse.Auth{Database: tg.database, Username: tg.user, Password: tg.password},
		DialTimeout: 10 * time.Second,
		ReadTimeout: 60 * time.Second,
		Compression: c,
	})
	if err != nil {
		t.Fatalf("clickhouse.Open: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// goRow is one row of the clickhouse-go tests' table.
type goRow struct {
	ID    string
	N     uint32
	Level string
	Note  *string
}

// goCols is the clickhouse-go tests' table (as eventsCols, plus a time).
const goCols = "id String, n UInt32, level Enum8('info' = 1, 'warn' = 2), note Nullable(String), at DateTime"

// goAt is the time every row carries.
var goAt = time.Date(2026, 12, 2, 10, 30, 0, 0, time.UTC)

// sendBatch inserts rows with PrepareBatch/Append/Send; cols is the INSERT's column list
// ("" for none: the table's columns in order).
func sendBatch(ctx context.Context, conn driver.Conn, table, cols string, rows []goRow) error {
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+table+cols)
	if err != nil {
		return fmt.Errorf("PrepareBatch: %w", err)
	}
	for _, r := range rows {
		var level any = r.Level
		if r.Level == "" {
			level = nil // clickhouse-go encodes nil into a non-Nullable Enum8 as the value 0
		}
		if err := b.Append(r.ID, r.N, level, r.Note, goAt); err != nil {
			return fmt.Errorf("Append: %w", err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("Send: %w", err)
	}
	return nil
}

// readBack reads table with Query and Scan, ordered by id.
func readBack(t testing.TB, conn driver.Conn, table string) []goRow {
	t.Helper()
	rows, err := conn.Query(t.Context(), "SELECT id, n, level, note, at FROM "+table+" ORDER BY id")
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	defer rows.Close()
	var out []goRow
	for rows.Next() {
		var r goRow
		var at time.Time
		if err := rows.Scan(&r.ID, &r.N, &r.Level, &r.Note, &at); err != nil {
			t.Fatalf("Scan: %v", err)
		}
		if !at.Equal(goAt) {
			t.Fatalf("row %s: at %v, want %v", r.ID, at, goAt)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("rows: %v", err)
	}
	return out
}

func strp(s string) *string { return &s }

// TestClickHouseGoHTTP runs clickhouse-go/v2 with Protocol: clickhouse.HTTP against the gateway
// (its HTTP mode does not work against ClickHouse 18.16, so there is no reference run): Open,
// Ping, PrepareBatch/Append/Send, Query/Scan, and a bad row the client encodes but the gateway
// refuses.
func TestClickHouseGoHTTP(t *testing.T) {
	t.Parallel()
	tg := gatewayTarget(t)
	conn := openHTTP(t, tg, nil)
	ctx := t.Context()

	t.Run("ping", func(t *testing.T) {
		if err := conn.Ping(ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
		v, err := conn.ServerVersion()
		if err != nil {
			t.Fatalf("ServerVersion: %v", err)
		}
		t.Logf("the gateway introduces itself as %s", v)
	})

	// PrepareBatch asks the server for the table's columns (DESCRIBE TABLE, scanning seven
	// columns per row) unless the caller names their types (WithColumnNamesAndTypes). The
	// store here is ClickHouse 18.16, whose own DESCRIBE has five: the gateway answers in
	// current ClickHouse's seven, so the plain calls work too, with and without a column list.
	const colList = " (id, n, level, note, at)"
	plain := func() context.Context { return ctx }
	batchCtxs := []struct {
		name string
		cols string
		ctx  func() context.Context
	}{
		{"described", colList, plain},
		{"described without a column list", "", plain},
		{"typed", colList, func() context.Context { return typedBatch(ctx) }},
	}
	for _, bc := range batchCtxs {
		t.Run("batch insert and query/"+bc.name, func(t *testing.T) {
			table := "go_rows_" + strings.ReplaceAll(bc.name, " ", "_")
			tg.createTable(t, table, goCols)
			want := []goRow{
				{ID: "a", N: 1, Level: "info"},
				{ID: "b", N: 2, Level: "warn", Note: strp("x")},
				{ID: "c", N: 4294967295, Level: "info", Note: strp("comma, \"quoted\"\n")},
			}
			if err := sendBatch(bc.ctx(), conn, table, bc.cols, want); err != nil {
				t.Fatal(err)
			}
			tg.landed(t, table, len(want))
			got := readBack(t, conn, table)
			if fmt.Sprint(rowsText(got)) != fmt.Sprint(rowsText(want)) {
				t.Fatalf("read back %v, want %v", rowsText(got), rowsText(want))
			}
		})

		t.Run("bad row is a ClickHouse exception naming row and column/"+bc.name, func(t *testing.T) {
			table := "go_bad_" + strings.ReplaceAll(bc.name, " ", "_")
			tg.createTable(t, table, goCols)
			// Row 2's level is nil: the client encodes it as Enum8 value 0, which the enum does
			// not have. The client does not check it; the gateway must.
			err := sendBatch(bc.ctx(), conn, table, bc.cols, []goRow{{ID: "a", N: 1, Level: "info"}, {ID: "b", N: 2}})
			if err == nil {
				t.Fatal("the bad row was accepted")
			}
			t.Logf("the client returned: %v", err)
			var exc *clickhouse.Exception
			if !errors.As(err, &exc) {
				t.Fatalf("error %v (%T) is not a *clickhouse.Exception", err, errors.Unwrap(err))
			}
			if exc.Code != 27 && exc.Code != 117 {
				t.Fatalf("exception code %d (%s), want 27 (CANNOT_PARSE_INPUT_ASSERTION_FAILED) or 117 (INCORRECT_DATA): %v", exc.Code, exc.Name, err)
			}
			if !strings.Contains(exc.Message, "row 2") || !strings.Contains(exc.Message, "level") {
				t.Fatalf("exception message %q does not name row 2 and column level", exc.Message)
			}
			if got := tg.count(t, table); got != 0 {
				t.Fatalf("%d rows of the refused batch are in %s, want none", got, table)
			}
		})
	}
}

// typedBatch is ctx with the types of goCols named, so that PrepareBatch sends no DESCRIBE.
func typedBatch(ctx context.Context) context.Context {
	return clickhouse.Context(ctx, clickhouse.WithColumnNamesAndTypes([]clickhouse.ColumnNameAndType{
		{Name: "id", Type: "String"}, {Name: "n", Type: "UInt32"}, {Name: "level", Type: "Enum8('info' = 1, 'warn' = 2)"},
		{Name: "note", Type: "Nullable(String)"}, {Name: "at", Type: "DateTime"},
	}))
}

// rowsText renders rows for comparison.
func rowsText(rows []goRow) []string {
	var out []string
	for _, r := range rows {
		note := "NULL"
		if r.Note != nil {
			note = fmt.Sprintf("%q", *r.Note)
		}
		out = append(out, fmt.Sprintf("%s/%d/%s/%s", r.ID, r.N, r.Level, note))
	}
	return out
}
