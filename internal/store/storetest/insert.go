package storetest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
)

var commonCols = []string{"id", "s", "fs", "i8", "i64", "u64", "f32", "f64", "d", "dt", "dtz", "ns", "arr", "an", "lc", "uid", "dec", "e", "tup", "dflt"}

// commonRows are canonical rows for commonCols: NULLs, empty arrays, unicode and escapes,
// extreme 64-bit integers, a time zone, decimals, enums and tuples.
var commonRows = []string{
	`[1,"héllo 世界 🎉 \"q\" \\ \n\t","abcd",-128,-9223372036854775808,18446744073709551615,0.5,-1.25e-10,"2024-02-29","2024-01-02 03:04:05","2024-01-02 12:04:05",null,[],[],"","6f9619ff-8b86-d011-b42d-00cf4fc964ff",-1.2500,"a",["x",0],0]`,
	`[2,"","wxyz",127,9223372036854775807,0,3.25,1e+300,"1970-01-02","1970-01-01 00:00:01","2000-01-01 09:00:00","text",["a","b\u0000c"],[null,-1,2147483647],"lc","00000000-0000-0000-0000-000000000000",99999999999999.9999,"b",["é",255],4294967295]`,
	`[3,"x","    ",0,0,9007199254740993,-0.25,0.1,"2149-06-06","2106-02-07 06:28:15","2024-07-01 00:00:00","",["", "ü"],[null],"ü","ffffffff-ffff-ffff-ffff-ffffffffffff",0.0001,"a",["",1],7]`,
}

// commonRowsBack is commonRows as canonical output (whitespace normalised).
var commonRowsBack = []string{
	commonRows[0],
	commonRows[1],
	`[3,"x","    ",0,0,9007199254740993,-0.25,0.1,"2149-06-06","2106-02-07 06:28:15","2024-07-01 00:00:00","",["","ü"],[null],"ü","ffffffff-ffff-ffff-ffff-ffffffffffff",0.0001,"a",["",1],7]`,
}

const commonSelect = "SELECT id, s, fs, i8, i64, u64, f32, f64, d, dt, dtz, ns, arr, an, lc, uid, dec, e, tup, dflt FROM %s.common ORDER BY id"

func testInsertReadBack(t *testing.T, h *Harness, _ Caps, enc encoding) {
	s := h.Store
	target := database(t, s)
	exec(t, s, target, sprintf(commonDDL, target.Database))
	err := s.Insert(t.Context(), enc(t, s, target, "common", commonCols, commonRows...))
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	got := mustQuery(t, s, target, sprintf(commonSelect, target.Database))
	equalRows(t, got, commonRowsBack)
}

var modernCols = []string{"id", "dt64", "d32", "b", "m", "ip4", "ip6", "i128", "nt", "j"}

var modernRows = []string{
	`[1,"2024-01-02 03:04:05.123","1950-06-01",true,{"a":1,"b":18446744073709551615},"10.0.0.1","2001:db8::1",-170141183460469231731687303715884105728,["x",null],{"k":"v"}]`,
	`[2,"1900-01-01 00:00:00.000","2299-12-31",false,{},"255.255.255.255","::ffff:1.2.3.4",170141183460469231731687303715884105727,["",7],{"a":{"b":"c"}}]`,
}

func testInsertModernReadBack(t *testing.T, h *Harness, caps Caps, enc encoding) {
	if !caps.ModernTypes {
		t.Log("engine has no modern types (capability ModernTypes=false); nothing to check")
		return
	}
	s := h.Store
	target := database(t, s)
	exec(t, s, target, sprintf(modernDDL, target.Database))
	err := s.Insert(t.Context(), enc(t, s, target, "modern", modernCols, modernRows...))
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	got := mustQuery(t, s, target, sprintf("SELECT id, dt64, d32, b, m, ip4, ip6, i128, nt, j FROM %s.modern ORDER BY id", target.Database))
	equalRows(t, got, modernRows)
}

func testInsertDefaults(t *testing.T, h *Harness, _ Caps, enc encoding) {
	s := h.Store
	target := database(t, s)
	exec(t, s, target, sprintf(commonDDL, target.Database))
	cols := commonCols[:len(commonCols)-1] // without dflt
	row := commonRows[0][:len(commonRows[0])-len(",0]")] + "]"
	if err := s.Insert(t.Context(), enc(t, s, target, "common", cols, row)); err != nil {
		t.Fatalf("insert: %v", err)
	}
	got := mustQuery(t, s, target, sprintf("SELECT id, dflt, mat, al FROM %s.common", target.Database))
	equalRows(t, got, []string{`[1,7,2,"héllo 世界 🎉 \"q\" \\ \n\t"]`})
}

func testInsertRejected(t *testing.T, h *Harness, _ Caps) {
	s := h.Store
	target := database(t, s)
	exec(t, s, target, sprintf("CREATE TABLE %s.t (id UInt64, v UInt8, d Date) ENGINE = MergeTree ORDER BY id", target.Database))
	for _, bad := range []string{`[2,"x","2024-01-01"]`, `[2,1,"not a date"]`, `[2,1]`, `{"id":2}`} {
		b := store.Batch{Target: target, Table: "t", Columns: []string{"id", "v", "d"},
			Rows: rowsOf(`[1,1,"2024-01-01"]`, bad, `[3,3,"2024-01-03"]`)}
		err := s.Insert(t.Context(), b)
		wantErr(t, "insert with "+bad, err, store.ErrRejected)
		if store.IsTransient(err) {
			t.Errorf("%s: a rejected insert must be permanent", bad)
		}
		var re *store.RowError
		if errors.As(err, &re) && re.Row != 1 {
			t.Errorf("%s: RowError names row %d, want 1", bad, re.Row)
		}
	}
	if n := count(t, s, target, "t"); n != "0" {
		t.Fatalf("%s rows visible after rejected inserts, want 0", n)
	}
}

func testInsertUnknownColumn(t *testing.T, h *Harness, _ Caps, enc encoding) {
	s := h.Store
	target := database(t, s)
	exec(t, s, target, sprintf("CREATE TABLE %s.t (id UInt64) ENGINE = MergeTree ORDER BY id", target.Database))
	b := store.Batch{Target: target, Table: "t", Columns: []string{"id", "nope"}, Rows: rowsOf(`[1,2]`)}
	if enc(t, s, target, "t", []string{"id"}, `[1]`).RowBinary != nil {
		b = store.Batch{Target: target, Table: "t", Columns: []string{"id", "nope"}, Types: []string{"UInt64", "UInt8"},
			RowBinary: []byte{1, 0, 0, 0, 0, 0, 0, 0, 2}, Count: 1}
	}
	err := s.Insert(t.Context(), b)
	wantErr(t, "insert naming a missing column", err, store.ErrUnknownColumn)
	if !store.SchemaChanged(err) {
		t.Errorf("unknown column must mean the schema changed: %v", err)
	}
}

// testInsertRowBinaryRejected: RowBinary bytes that do not match the table's columns fail the
// whole insert permanently; nothing of it lands.
func testInsertRowBinaryRejected(t *testing.T, h *Harness, _ Caps) {
	s := h.Store
	target := database(t, s)
	exec(t, s, target, sprintf("CREATE TABLE %s.t (id UInt64, v UInt8, d Date) ENGINE = MergeTree ORDER BY id", target.Database))
	good := rowBinaryBatch(t, s, target, "t", []string{"id", "v", "d"}, `[1,1,"2024-01-01"]`, `[3,3,"2024-01-03"]`)
	for name, data := range map[string][]byte{
		"truncated":   good.RowBinary[:len(good.RowBinary)-1],
		"extra bytes": append(append([]byte(nil), good.RowBinary...), 7),
	} {
		b := good
		b.RowBinary = data
		err := s.Insert(t.Context(), b)
		wantErr(t, "RowBinary insert "+name, err, store.ErrRejected)
		if store.IsTransient(err) {
			t.Errorf("%s: a rejected insert must be permanent", name)
		}
	}
	if n := count(t, s, target, "t"); n != "0" {
		t.Fatalf("%s rows visible after rejected inserts, want 0", n)
	}
	if err := s.Insert(t.Context(), good); err != nil {
		t.Fatalf("insert: %v", err)
	}
	if n := count(t, s, target, "t"); n != "2" {
		t.Fatalf("%s rows after the good insert, want 2", n)
	}
}

// encoding builds the batch of rows (canonical JSON arrays) for cols of table.
type encoding func(t *testing.T, s store.Store, target store.Target, table string, cols []string, rows ...string) store.Batch

func canonicalBatch(_ *testing.T, _ store.Store, target store.Target, table string, cols []string, rows ...string) store.Batch {
	return store.Batch{Target: target, Table: table, Columns: cols, Rows: rowsOf(rows...)}
}

// rowBinaryBatch encodes rows as RowBinary in the types the store reports for cols.
func rowBinaryBatch(t *testing.T, s store.Store, target store.Target, table string, cols []string, rows ...string) store.Batch {
	t.Helper()
	all, err := s.Columns(t.Context(), target, table)
	if err != nil {
		t.Fatal(err)
	}
	types := make([]*chtype.Type, len(cols))
	b := store.Batch{Target: target, Table: table, Columns: cols, Types: make([]string, len(cols)), Count: len(rows)}
	for i, name := range cols {
		for _, c := range all {
			if c.Name == name {
				types[i], b.Types[i] = c.Type, c.TypeName
			}
		}
		if types[i] == nil {
			t.Fatalf("table %s has no column %s", table, name)
		}
	}
	for ri, row := range rows {
		var vals []json.RawMessage
		if err := json.Unmarshal([]byte(row), &vals); err != nil || len(vals) != len(cols) {
			t.Fatalf("row %d is not a JSON array of %d values", ri, len(cols))
		}
		for i, v := range vals {
			if b.RowBinary, err = types[i].AppendRowBinary(b.RowBinary, v); err != nil {
				t.Fatalf("row %d column %s: %v", ri, cols[i], err)
			}
		}
	}
	return b
}

// bothEncodings runs fn once with canonical JSON rows (version 1 backlogs) and once with
// RowBinary rows.
func bothEncodings(fn func(t *testing.T, h *Harness, caps Caps, enc encoding)) func(t *testing.T, h *Harness, caps Caps) {
	return func(t *testing.T, h *Harness, caps Caps) {
		t.Run("RowBinary", func(t *testing.T) { fn(t, h, caps, rowBinaryBatch) })
		t.Run("CanonicalJSON", func(t *testing.T) { fn(t, h, caps, canonicalBatch) })
	}
}

// testInsertRowBinaryAnyBytes: RowBinary is binary — values whose bytes look like text
// separators (newlines, empty lines, ';', CR LF, NUL) insert intact and completely. Inline
// data on the embedded engine was cut at such bytes, sometimes without an error.
func testInsertRowBinaryAnyBytes(t *testing.T, h *Harness, _ Caps) {
	s := h.Store
	target := database(t, s)
	exec(t, s, target, sprintf("CREATE TABLE %s.t (id UInt64, s String) ENGINE = MergeTree ORDER BY id", target.Database))
	rows := []string{`[10,"a"]`, `[2570,"\n\n;"]`, `[168430090,""]`, `[59,"\r\n\r\n"]`, `[3338,"\u0000;\n"]`, `[32,"end"]`}
	if err := s.Insert(t.Context(), rowBinaryBatch(t, s, target, "t", []string{"id", "s"}, rows...)); err != nil {
		t.Fatalf("insert: %v", err)
	}
	got := mustQuery(t, s, target, sprintf("SELECT id, s FROM %s.t ORDER BY id", target.Database))
	equalRows(t, got, []string{`[10,"a"]`, `[32,"end"]`, `[59,"\r\n\r\n"]`, `[2570,"\n\n;"]`, `[3338,"\u0000;\n"]`, `[168430090,""]`})
}

// testInsertRowBinaryTypeChanged: rows encoded before a column's type changed (Int64 and
// String in the frame, Int32 and Nullable(String) in the table now) insert with their values
// converted, as a text insert would, instead of being read as the new type's bytes.
func testInsertRowBinaryTypeChanged(t *testing.T, h *Harness, _ Caps) {
	s := h.Store
	target := database(t, s)
	exec(t, s, target, sprintf("CREATE TABLE %s.t (id UInt64, v Int32, s Nullable(String)) ENGINE = MergeTree ORDER BY id", target.Database))
	var data []byte
	for _, row := range [][3]string{{"1", "5", `"a"`}, {"2", "-7", `"bc"`}} {
		for i, typ := range []string{"UInt64", "Int64", "String"} {
			ty, err := chtype.Parse(typ)
			if err != nil {
				t.Fatal(err)
			}
			if data, err = ty.AppendRowBinary(data, []byte(row[i])); err != nil {
				t.Fatal(err)
			}
		}
	}
	b := store.Batch{Target: target, Table: "t", Columns: []string{"id", "v", "s"}, Types: []string{"UInt64", "Int64", "String"}, RowBinary: data, Count: 2}
	if err := s.Insert(t.Context(), b); err != nil {
		t.Fatalf("insert: %v", err)
	}
	got := mustQuery(t, s, target, sprintf("SELECT id, v, s FROM %s.t ORDER BY id", target.Database))
	equalRows(t, got, []string{`[1,5,"a"]`, `[2,-7,"bc"]`})
}
