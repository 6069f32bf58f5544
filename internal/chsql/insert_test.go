package chsql

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseInsert(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want Insert
		data string
	}{
		{src: "INSERT INTO t FORMAT JSONEachRow\n{\"a\":1}", want: Insert{Table: "t", Format: "JSONEachRow"}, data: `{"a":1}`},
		{src: "insert into db1.events format CSV", want: Insert{Database: "db1", Table: "events", Format: "CSV"}},
		{src: "  -- a comment\n/* block */ INSERT  INTO TABLE `my db`.\"my\"\"t\" (a, `b c`, \"d\") FORMAT TSV \t\r\n1\t2\t3\n",
			want: Insert{Database: "my db", Table: `my"t`, Columns: []string{"a", "b c", "d"}, Format: "TSV"}, data: "1\t2\t3\n"},
		{src: "INSERT INTO t (a) SETTINGS async_insert=1, insert_deduplication_token = 'tok\\'1', x = -1.5 FORMAT CSV 1\n",
			want: Insert{Table: "t", Columns: []string{"a"}, Format: "CSV",
				Settings: []Setting{{"async_insert", "1"}, {"insert_deduplication_token", "tok'1"}, {"x", "-1.5"}}}, data: "1\n"},
		// Only one line break is skipped: a second one belongs to the data.
		{src: "INSERT INTO t FORMAT CSV\n\n1", want: Insert{Table: "t", Format: "CSV"}, data: "\n1"},
	} {
		got, err := ParseInsert(tc.src)
		if err != nil {
			t.Errorf("%q: %v", tc.src, err)
			continue
		}
		data := tc.src[got.Data:]
		got.Data = 0
		if !reflect.DeepEqual(got, tc.want) || data != tc.data {
			t.Errorf("%q:\n got %+v data %q\nwant %+v data %q", tc.src, got, data, tc.want, tc.data)
		}
		if !IsInsert(tc.src) {
			t.Errorf("IsInsert(%q) = false", tc.src)
		}
	}
}

func TestParseInsertRefuses(t *testing.T) {
	for _, tc := range []struct {
		src       string
		sentinel  error
		mentioned string
	}{
		{"INSERT INTO t VALUES (1, 2)", ErrUnsupported, "VALUES"},
		{"INSERT INTO t SELECT 1", ErrUnsupported, "SELECT"},
		{"INSERT INTO FUNCTION remote('h', db.t) FORMAT CSV", ErrUnsupported, "FUNCTION"},
		{"INSERT INTO t", ErrIncomplete, ""},
		{"INSERT INTO t (a, b", ErrIncomplete, ""},
		{"INSERT INTO t FORMAT", ErrIncomplete, ""},
		{"INSERT INTO t FORMAT 1", ErrSyntax, "a format name"},
		{"INSERT INTO t (a b) FORMAT CSV", ErrSyntax, "',' or ')'"},
		{"INSERT INTO t (a,) FORMAT CSV", ErrSyntax, "a column name"},
		{"INSERT INTO `` FORMAT CSV", ErrSyntax, "empty quoted name"},
		{"INSERT t FORMAT CSV", ErrSyntax, "expected INTO"},
		{"INSERT INTO t SETTINGS a FORMAT CSV", ErrSyntax, "'=' after setting a"},
		{"INSERT INTO t SETTINGS a = FORMAT CSV", ErrSyntax, "FORMAT, VALUES or SELECT"},
		{"INSERT INTO t WHERE", ErrSyntax, "FORMAT, VALUES or SELECT"},
		{"SELECT 1", ErrSyntax, "expected INSERT"},
	} {
		_, err := ParseInsert(tc.src)
		if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.mentioned) {
			t.Errorf("%q: got %v, want %v mentioning %q", tc.src, err, tc.sentinel, tc.mentioned)
		}
	}
	var se *SyntaxError
	if _, err := ParseInsert("INSERT INTO t (a b) FORMAT CSV"); !errors.As(err, &se) || se.Pos != 17 {
		t.Errorf("position: got %v", err)
	}
}

func TestIsInsert(t *testing.T) {
	for src, want := range map[string]bool{
		"SELECT 1": false, "  /* x */ insert into t format CSV": true, "": false, "INSERTED": false,
		"WITH 1 AS x SELECT x": false, "-- INSERT\nSELECT 1": false,
	} {
		if got := IsInsert(src); got != want {
			t.Errorf("IsInsert(%q) = %v, want %v", src, got, want)
		}
	}
}

// FuzzParseInsert checks that the parser never panics, that a parsed statement's data offset is
// inside the text, and that a statement re-assembled from what it parsed parses to the same.
func FuzzParseInsert(f *testing.F) {
	for _, s := range []string{
		"INSERT INTO t FORMAT JSONEachRow\n{}", "INSERT INTO `a`.\"b\" (x, `y`) SETTINGS k='v' FORMAT CSV\r\n1,2",
		"INSERT INTO t VALUES (1)", "/* c */ insert into t format TSV", "INSERT INTO t (a", "INSERT INTO 't'",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		ins, err := ParseInsert(src)
		if err != nil {
			var se *SyntaxError
			if errors.As(err, &se) && (se.Pos < 0 || se.Pos > len(src)) {
				t.Fatalf("%q: position %d outside the text", src, se.Pos)
			}
			return
		}
		if ins.Data < 0 || ins.Data > len(src) || ins.Table == "" || ins.Format == "" {
			t.Fatalf("%q: %+v", src, ins)
		}
		again, err := ParseInsert(assemble(ins))
		if err != nil {
			t.Fatalf("%q → %q: %v", src, assemble(ins), err)
		}
		again.Data, ins.Data = 0, 0
		if !reflect.DeepEqual(again, ins) {
			t.Fatalf("%q: %+v, re-parsed %+v", src, ins, again)
		}
	})
}

// assemble writes ins back as a statement with every name backquoted.
func assemble(ins Insert) string {
	q := func(s string) string {
		return "`" + strings.NewReplacer(`\`, `\\`, "`", "``").Replace(s) + "`"
	}
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	if ins.Database != "" {
		b.WriteString(q(ins.Database) + ".")
	}
	b.WriteString(q(ins.Table))
	if ins.Columns != nil {
		for i, c := range ins.Columns {
			if i == 0 {
				b.WriteString(" (")
			} else {
				b.WriteString(", ")
			}
			b.WriteString(q(c))
		}
		b.WriteString(")")
	}
	for i, s := range ins.Settings {
		if i == 0 {
			b.WriteString(" SETTINGS ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(q(s.Name) + " = '" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s.Value) + "'")
	}
	b.WriteString(" FORMAT " + ins.Format + "\n")
	return b.String()
}
