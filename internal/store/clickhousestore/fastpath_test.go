package clickhousestore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// fastDDL has a column for each type the insert fast path builds as a typed slice, beyond the
// conformance suite's table.
const fastDDL = `CREATE TABLE %s.fast (id UInt64, u8 UInt8, u16 UInt16, u32 UInt32, i16 Int16, i32 Int32,
f32 Float32, f64 Float64, s String, d Date, dt DateTime,
nu8 Nullable(UInt8), ni8 Nullable(Int8), nf64 Nullable(Float64), nd Nullable(Date), ndt Nullable(DateTime), ns Nullable(String),
au8 Array(UInt8), ai64 Array(Int64), af64 Array(Float64), adt Array(DateTime), ad Array(Date), as Array(String),
lcs LowCardinality(String), lcn LowCardinality(Nullable(String))) ENGINE = MergeTree ORDER BY id`

var fastCols = []string{"id", "u8", "u16", "u32", "i16", "i32", "f32", "f64", "s", "d", "dt",
	"nu8", "ni8", "nf64", "nd", "ndt", "ns", "au8", "ai64", "af64", "adt", "ad", "as", "lcs", "lcn"}

// fastRows are canonical rows; the second spells values in non-canonical forms ToDriver accepts
// (quoted numbers, unix seconds, escapes), which must read back canonical.
var fastRows = []string{
	`[1,255,65535,4294967295,-32768,-2147483648,0.5,-12.25,"héllo \"x\"","2024-02-29","2024-01-02 03:04:05",` +
		`0,-128,0.1,"1970-01-01","2106-02-07 06:28:15","ü",[0,255],[-9223372036854775808,9223372036854775807],[1e+300,-0.5],` +
		`["2024-01-02 03:04:05"],["2149-06-06"],["a","","\u0000"],"lc","n"]`,
	`[2,"7",0,0,0,0,-1.5,194846116661.45821,"tab\tnew\nline","1970-01-01",1700000000,` +
		`null,null,null,null,null,null,[],[],[],[],[],[],"",null]`,
}

var fastBack = []string{
	fastRows[0],
	`[2,7,0,0,0,0,-1.5,1.9484611666145822e+11,"tab\tnew\nline","1970-01-01","2023-11-14 22:13:20",` +
		`null,null,null,null,null,null,[],[],[],[],[],[],"",null]`,
}

func TestInsertFastPathReadBack(t *testing.T) {
	ch := testsvc.ClickHouseServer(t)
	s := newStore(t, ch.NativeAddr)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	ctx := t.Context()
	db := testsvc.UniqueName(t, "fast")
	if err := s.Exec(ctx, store.Target{Database: "default"}, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Exec(context.Background(), store.Target{Database: "default"}, "DROP DATABASE "+db) })
	target := store.Target{Database: db}
	if err := s.Exec(ctx, target, fmt.Sprintf(fastDDL, db)); err != nil {
		t.Fatal(err)
	}

	// Two inserts through the same pooled decoder; the rows of the first are overwritten after
	// Insert returns, which must not reach the server (Insert does not keep views of them).
	first := [][]byte{[]byte(fastRows[0])}
	if err := s.Insert(ctx, store.Batch{Target: target, Table: "fast", Columns: fastCols, Rows: first}); err != nil {
		t.Fatal(err)
	}
	for i := range first[0] {
		first[0][i] = 'X'
	}
	if err := s.Insert(ctx, store.Batch{Target: target, Table: "fast", Columns: fastCols, Rows: [][]byte{[]byte(fastRows[1])}}); err != nil {
		t.Fatal(err)
	}

	rows, err := s.Query(ctx, target, store.Query{SQL: "SELECT " + strings.Join(fastCols, ", ") + " FROM " + db + ".fast ORDER BY id"})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		got = append(got, string(rows.Row()))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(fastBack) {
		t.Fatalf("got %d rows, want %d: %q", len(got), len(fastBack), got)
	}
	for i := range got {
		if got[i] != fastBack[i] {
			t.Errorf("row %d:\ngot  %s\nwant %s", i, got[i], fastBack[i])
		}
	}
}
