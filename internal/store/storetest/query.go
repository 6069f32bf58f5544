package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/store"
)

func testQueryStreams(t *testing.T, h *Harness, _ Caps) {
	s := h.Store
	target := database(t, s)
	rows, err := s.Query(t.Context(), target, store.Query{SQL: "SELECT number AS n, toString(number) AS s FROM system.numbers LIMIT 100000"})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols := rows.Columns()
	if len(cols) != 2 || cols[0].Name != "n" || cols[0].TypeName != "UInt64" || cols[1].Name != "s" || cols[1].TypeName != "String" {
		t.Fatalf("columns %+v", cols)
	}
	var n int
	for rows.Next() {
		if n == 99999 && string(rows.Row()) != `[99999,"99999"]` {
			t.Fatalf("last row %s", rows.Row())
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 100000 || rows.Stats().Rows != 100000 {
		t.Fatalf("read %d rows, stats say %d, want 100000", n, rows.Stats().Rows)
	}
	if rows.Stats().Elapsed <= 0 {
		t.Errorf("elapsed not recorded: %+v", rows.Stats())
	}
	if err := rows.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// queryErr runs q to the end and returns the first error, from Query or from iteration.
func queryErr(t *testing.T, s store.Store, target store.Target, q store.Query) error {
	t.Helper()
	_, err := queryAll(t, s, target, q)
	return err
}

func testLimitRows(t *testing.T, h *Harness, _ Caps) {
	s := h.Store
	target := database(t, s)
	err := queryErr(t, s, target, store.Query{SQL: "SELECT number FROM system.numbers LIMIT 100000", Limits: store.Limits{MaxResultRows: 10}})
	wantErr(t, "100000 rows with max_result_rows=10", err, store.ErrLimitExceeded)
	if store.IsTransient(err) {
		t.Error("a limit error must be permanent")
	}
	got, err := queryAll(t, s, target, store.Query{SQL: "SELECT number FROM system.numbers LIMIT 5", Limits: store.Limits{MaxResultRows: 10}})
	if err != nil || len(got) != 5 {
		t.Fatalf("5 rows under a 10-row limit: %v, %v", got, err)
	}
}

func testLimitTime(t *testing.T, h *Harness, _ Caps) {
	s := h.Store
	target := database(t, s)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	rows, err := s.Query(ctx, target, store.Query{
		SQL:    "SELECT count() FROM system.numbers WHERE NOT ignore(sipHash64(toString(number)))",
		Limits: store.Limits{MaxExecutionTime: time.Second},
	})
	if err == nil {
		for rows.Next() {
		}
		err = rows.Err()
		_ = rows.Close()
	}
	wantErr(t, "endless query with max_execution_time=1s", err, store.ErrLimitExceeded)
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("time limit took %v", d)
	}
}

func testReadOnly(t *testing.T, h *Harness, _ Caps) {
	s := h.Store
	target := database(t, s)
	exec(t, s, target, sprintf("CREATE TABLE %s.t (id UInt64) ENGINE = MergeTree ORDER BY id", target.Database))
	ro := store.Limits{ReadOnly: true, MaxResultRows: 1000}
	for _, sql := range []string{
		sprintf("INSERT INTO %s.t SELECT number FROM system.numbers LIMIT 3", target.Database),
		sprintf("CREATE TABLE %s.t2 (id UInt64) ENGINE = MergeTree ORDER BY id", target.Database),
		sprintf("DROP TABLE %s.t", target.Database),
	} {
		err := queryErr(t, s, target, store.Query{SQL: sql, Limits: ro})
		wantErr(t, "read-only "+sql, err, store.ErrReadOnly)
	}
	// A read-only query cannot lift its own limits.
	err := queryErr(t, s, target, store.Query{SQL: "SELECT number FROM system.numbers LIMIT 2000 SETTINGS max_result_rows = 0", Limits: ro})
	if err == nil {
		t.Fatal("a read-only query changed its own max_result_rows")
	}
	if n := count(t, s, target, "t"); n != "0" {
		t.Fatalf("read-only insert wrote %s rows", n)
	}
	if _, err := s.Columns(t.Context(), target, "t"); err != nil {
		t.Fatalf("read-only DROP dropped the table: %v", err)
	}
	got, err := queryAll(t, s, target, store.Query{SQL: "SELECT 1", Limits: ro})
	if err != nil || len(got) != 1 || got[0] != "[1]" {
		t.Fatalf("read-only SELECT: %v %v", got, err)
	}
}

func testParams(t *testing.T, h *Harness, _ Caps) {
	s := h.Store
	target := database(t, s)
	exec(t, s, target, sprintf("CREATE TABLE %s.t (id UInt64, name String) ENGINE = MergeTree ORDER BY id", target.Database))
	if err := s.Insert(t.Context(), store.Batch{Target: target, Table: "t", Columns: []string{"id", "name"},
		Rows: rowsOf(`[1,"alice"]`, `[2,"bob"]`)}); err != nil {
		t.Fatal(err)
	}
	evil := `x' OR 1=1) --` + "\n" + `; DROP TABLE t; \' {n:UInt64}`
	evilJSON, _ := json.Marshal(evil)
	got, err := queryAll(t, s, target, store.Query{
		SQL: sprintf("SELECT {s:String} AS s, {n:UInt64} AS n, {a:Array(Nullable(String))} AS a, count() AS c FROM %s.t WHERE name = {s:String}", target.Database),
		Params: []store.Param{
			{Name: "s", Value: evilJSON},
			{Name: "n", Value: json.RawMessage(`18446744073709551615`)},
			{Name: "a", Value: json.RawMessage(`["it's", null]`)},
		},
		Limits: store.Limits{ReadOnly: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `[` + string(evilJSON) + `,18446744073709551615,["it's",null],0]`
	equalRows(t, got, []string{want})

	got, err = queryAll(t, s, target, store.Query{
		SQL:    sprintf("SELECT id FROM %s.t WHERE name = {name:String} AND id >= {min:UInt8}", target.Database),
		Params: []store.Param{{Name: "name", Value: json.RawMessage(`"bob"`)}, {Name: "min", Value: json.RawMessage(`1`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	equalRows(t, got, []string{`[2]`})

	err = queryErr(t, s, target, store.Query{SQL: "SELECT {n:UInt8}", Params: []store.Param{{Name: "n", Value: json.RawMessage(`300`)}}})
	wantErr(t, "parameter out of range", err, store.ErrRejected)
	if n := count(t, s, target, "t"); n != "2" {
		t.Fatalf("table has %s rows after the injection attempt, want 2", n)
	}
}

func testSyntaxError(t *testing.T, h *Harness, _ Caps) {
	s := h.Store
	target := database(t, s)
	err := queryErr(t, s, target, store.Query{SQL: "SELEC 1"})
	wantErr(t, "syntax error", err, store.ErrRejected)
	var exc *store.Exception
	if !errors.As(err, &exc) || exc.Code != 62 {
		t.Errorf("syntax error does not carry ClickHouse code 62: %v", err)
	}
}
