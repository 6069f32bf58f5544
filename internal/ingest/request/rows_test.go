package request

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store"
)

type wantErr struct {
	row          int
	column, code string
}

func TestRowErrors(t *testing.T) {
	const base = `"ts":"2026-01-02 03:04:05","id":1`
	tests := []struct {
		name string
		row  string // one JSON row (object or not)
		want []wantErr
		msg  string // a substring of the first error's message
	}{
		{"unknown column", `{` + base + `,"nope":1}`, []wantErr{{0, "nope", RowUnknownColumn}}, `"nope"`},
		{"materialized", `{` + base + `,"m":1}`, []wantErr{{0, "m", RowNotWritable}}, "MATERIALIZED"},
		{"alias", `{` + base + `,"a":1}`, []wantErr{{0, "a", RowNotWritable}}, "ALIAS"},
		{"missing required", `{"id":1}`, []wantErr{{0, "ts", RowMissingColumn}}, `"ts"`},
		{"missing both", `{"u8":1}`, []wantErr{{0, "ts", RowMissingColumn}, {0, "id", RowMissingColumn}}, "required"},
		{"duplicate", `{` + base + `,"id":2}`, []wantErr{{0, "id", RowDuplicateColumn}}, "more than once"},
		{"UInt8 300", `{` + base + `,"u8":300}`, []wantErr{{0, "u8", "out_of_range"}}, "300"},
		{"UInt64 negative", `{"ts":0,"id":-1}`, []wantErr{{0, "id", "out_of_range"}}, "-1"},
		{"UInt64 overflow", `{"ts":0,"id":18446744073709551616}`, []wantErr{{0, "id", "out_of_range"}}, "18446744073709551616"},
		{"Int64 overflow", `{` + base + `,"i64":9223372036854775808}`, []wantErr{{0, "i64", "out_of_range"}}, "9223372036854775808"},
		{"fraction into integer", `{` + base + `,"u8":1.5}`, []wantErr{{0, "u8", "invalid_value"}}, "1.5"},
		{"bad date", `{` + base + `,"d":"2026-02-30"}`, []wantErr{{0, "d", "invalid_value"}}, "2026-02-30"},
		{"bad datetime", `{"ts":"yesterday","id":1}`, []wantErr{{0, "ts", "invalid_value"}}, "yesterday"},
		{"bad UUID", `{` + base + `,"uid":"not-a-uuid"}`, []wantErr{{0, "uid", "invalid_value"}}, "not-a-uuid"},
		{"FixedString too long", `{` + base + `,"code":"abc"}`, []wantErr{{0, "code", "too_long"}}, "FixedString(2)"},
		{"nested array", `{` + base + `,"tags":[["a"]]}`, []wantErr{{0, "tags", "type_mismatch"}}, "[0]"},
		{"string for number", `{` + base + `,"u8":"many"}`, []wantErr{{0, "u8", "invalid_value"}}, "many"},
		{"bool for string", `{` + base + `,"name":true}`, []wantErr{{0, "name", "type_mismatch"}}, "true"},
		{"object for int", `{` + base + `,"u8":{"x":1}}`, []wantErr{{0, "u8", "type_mismatch"}}, `{"x":1}`},
		{"null into required", `{"ts":null,"id":1}`, []wantErr{{0, "ts", "null_not_allowed"}}, `"ts"`},
		{"unsupported type", `{` + base + `,"agg":1}`, []wantErr{{0, "agg", "unsupported_type"}}, "AggregateFunction"},
		{"not an object", `[1,2]`, []wantErr{{0, "", RowNotAnObject}}, "[1,2]"},
		{"string row", `"row"`, []wantErr{{0, "", RowNotAnObject}}, "row"},
		{"many problems", `{"id":"x","nope":1,"m":2,"u8":-1}`, []wantErr{{0, "nope", RowUnknownColumn}, {0, "m", RowNotWritable}, {0, "ts", RowMissingColumn}, {0, "id", "invalid_value"}, {0, "u8", "out_of_range"}}, "nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := `[` + okRow + `,` + tc.row + `,` + okRow + `]`
			for i := range tc.want {
				tc.want[i].row = 1
			}
			// Atomic: 400 listing the errors, nothing accepted.
			res, herr := parse(t, "application/json", body, Options{})
			if len(res.Segments) != 0 {
				t.Fatalf("atomic request accepted rows: %+v", res)
			}
			d := rowErrorsOf(t, herr)
			if d.Total != 3 || d.Rejected != 1 || d.ErrorCount != len(tc.want) {
				t.Fatalf("details %+v", d)
			}
			assertErrors(t, d.Errors, tc.want)
			if !strings.Contains(d.Errors[0].Message, tc.msg) {
				t.Fatalf("message %q does not contain %q", d.Errors[0].Message, tc.msg)
			}
			if !strings.Contains(herr.Message, "1 of 3 rows") {
				t.Fatalf("message %q does not give the counts", herr.Message)
			}
			// Partial: the good rows are accepted, the bad one reported.
			res, herr = parse(t, "application/json", body, Options{Partial: true})
			if herr != nil {
				t.Fatalf("partial: %+v", herr)
			}
			checkResult(t, res)
			if res.Accepted != 2 || res.Rejected != 1 || res.Total != 3 || res.ErrorCount != len(tc.want) {
				t.Fatalf("partial counts %+v", res)
			}
			assertErrors(t, res.Errors, tc.want)
		})
	}
}

func assertErrors(t *testing.T, got []RowError, want []wantErr) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d errors %+v, want %+v", len(got), got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.Row != w.row || g.Column != w.column || g.Code != w.code {
			t.Fatalf("error %d: got {%d %q %s} (%s), want %+v", i, g.Row, g.Column, g.Code, g.Message, w)
		}
		if w.column != "" && !strings.Contains(g.Message, `"`+w.column+`"`) {
			t.Fatalf("message %q does not name column %q", g.Message, w.column)
		}
	}
}

func TestEncoding(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"omitted nullable becomes null, defaults stay omitted",
			okRow,
			[]string{`ts,id,uid,code,d,i64: ["2026-01-02 03:04:05",1,null,null,null,null]`}},
		{"table order whatever the key order",
			`{"i64":-5,"d":"2026-03-04","id":"7","name":"n","ts":"2026-01-02T03:04:05+01:00","u8":"8"}`,
			[]string{`ts,id,u8,name,uid,code,d,i64: ["2026-01-02 02:04:05",7,8,"n",null,null,"2026-03-04",-5]`}},
		{"null for a DEFAULT column that is not Nullable is omitted",
			`{"ts":0,"id":1,"u8":null,"tags":null}`,
			[]string{`ts,id,uid,code,d,i64: ["1970-01-01 00:00:00",1,null,null,null,null]`}},
		{"null for a Nullable DEFAULT column is null",
			`{"ts":0,"id":1,"note":null}`,
			[]string{`ts,id,uid,code,d,note,i64: ["1970-01-01 00:00:00",1,null,null,null,null,null]`}},
		{"explicit null for a Nullable column equals omission",
			`{"ts":0,"id":1,"uid":null,"code":null}`,
			[]string{`ts,id,uid,code,d,i64: ["1970-01-01 00:00:00",1,null,null,null,null]`}},
		{"rows omitting different defaults go to different segments",
			`[{"ts":0,"id":1},{"ts":0,"id":2,"u8":3},{"ts":0,"id":3},{"ts":0,"id":4,"u8":5}]`,
			[]string{
				`ts,id,uid,code,d,i64: ["1970-01-01 00:00:00",1,null,null,null,null]`,
				`ts,id,uid,code,d,i64: ["1970-01-01 00:00:00",3,null,null,null,null]`,
				`ts,id,u8,uid,code,d,i64: ["1970-01-01 00:00:00",2,3,null,null,null,null]`,
				`ts,id,u8,uid,code,d,i64: ["1970-01-01 00:00:00",4,5,null,null,null,null]`,
			}},
		{"64-bit integers keep full precision",
			`[{"ts":0,"id":18446744073709551615,"i64":-9223372036854775808},{"ts":0,"id":"9007199254740993","i64":9223372036854775807}]`,
			[]string{
				`ts,id,uid,code,d,i64: ["1970-01-01 00:00:00",18446744073709551615,null,null,null,-9223372036854775808]`,
				`ts,id,uid,code,d,i64: ["1970-01-01 00:00:00",9007199254740993,null,null,null,9223372036854775807]`,
			}},
		{"unicode keys and values round trip",
			`{"ts":0,"\u0069d":1,"name":"h\u00e9llo \ud83d\ude00 日本 \"q\" \\ \n","code":"ü"}`,
			[]string{`ts,id,name,uid,code,d,i64: ["1970-01-01 00:00:00",1,"héllo 😀 日本 \"q\" \\ \n",null,"ü",null,null]`}},
		{"whitespace everywhere",
			" [ \n { \"ts\" : 0 , \"id\" : 1 } \n ] \n",
			[]string{`ts,id,uid,code,d,i64: ["1970-01-01 00:00:00",1,null,null,null,null]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, herr := parse(t, "application/json", tc.body, Options{})
			if herr != nil {
				t.Fatalf("%+v", herr)
			}
			checkResult(t, res)
			if got := rowsOf(res); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestUnicodeValueDecodes(t *testing.T) {
	const s = "héllo 😀 日本 \"q\" \\ \n\t\u2028"
	in, _ := json.Marshal(map[string]any{"ts": 0, "id": 1, "name": s})
	res, herr := parse(t, "application/json", string(in), Options{})
	if herr != nil {
		t.Fatal(herr)
	}
	var vals []any
	if err := json.Unmarshal(firstRow(t, res), &vals); err != nil {
		t.Fatal(err)
	}
	if vals[2] != s {
		t.Fatalf("got %q, want %q", vals[2], s)
	}
}

func TestEmptyRow(t *testing.T) {
	cols := []store.Column{store.NewColumn("n", "UInt8", "DEFAULT", "1")}
	_, herr := Parse("application/json", "", strings.NewReader(`[{"n":1},{}]`), cols, Limits{}, Options{})
	d := rowErrorsOf(t, herr)
	assertErrors(t, d.Errors, []wantErr{{1, "", RowEmpty}})
	// {} is fine when a Nullable column without DEFAULT gives the insert a column to name.
	res, herr := parse(t, "application/json", `{"ts":0,"id":1}`, Options{})
	if herr != nil || res.Accepted != 1 {
		t.Fatalf("%+v %+v", res, herr)
	}
}

func TestNDJSONRowNumbers(t *testing.T) {
	body := "\n" + okRow + "\n\n  \r\n" + `{"ts":0,"id":-1}` + "\r\n" + `7` + "\n" + okRow // no trailing newline
	res, herr := parse(t, ndjsonCT, body, Options{Partial: true})
	if herr != nil {
		t.Fatal(herr)
	}
	checkResult(t, res)
	if res.Total != 4 || res.Accepted != 2 {
		t.Fatalf("counts %+v", res)
	}
	assertErrors(t, res.Errors, []wantErr{{1, "id", "out_of_range"}, {2, "", RowNotAnObject}})
	// A row may span lines: each value is a row, whatever its layout.
	res, herr = parse(t, ndjsonCT, "{\"ts\":0,\n\"id\":1}\n{\"ts\":0,\"id\":2}", Options{})
	if herr != nil || res.Accepted != 2 {
		t.Fatalf("%+v %+v", res, herr)
	}
}

func TestMaxErrorsKeepsCountsExact(t *testing.T) {
	var b strings.Builder
	for i := range 50 {
		if i%5 == 0 {
			b.WriteString(okRow + "\n")
		} else {
			fmt.Fprintf(&b, `{"ts":0,"id":-%d,"nope":1}`+"\n", i) // two errors each
		}
	}
	res, herr := Parse(ndjsonCT, "", strings.NewReader(b.String()), testCols(), Limits{MaxErrors: 7}, Options{Partial: true})
	if herr != nil {
		t.Fatal(herr)
	}
	checkResult(t, res)
	if n := res.ErrorsByCode; n[RowUnknownColumn] != 40 || n["out_of_range"] != 40 || len(n) != 2 {
		t.Fatalf("errors by code %v", n)
	}
	if res.Total != 50 || res.Accepted != 10 || res.Rejected != 40 || res.ErrorCount != 80 || len(res.Errors) != 7 {
		t.Fatalf("counts: total %d accepted %d rejected %d errors %d kept %d", res.Total, res.Accepted, res.Rejected, res.ErrorCount, len(res.Errors))
	}
	if res.Errors[0].Row != 1 || res.Errors[6].Row != 4 {
		t.Fatalf("errors are not the first ones in body order: %+v", res.Errors)
	}
	_, herr = Parse(ndjsonCT, "", strings.NewReader(b.String()), testCols(), Limits{MaxErrors: 7}, Options{})
	d := rowErrorsOf(t, herr)
	if d.Total != 50 || d.Rejected != 40 || d.ErrorCount != 80 || len(d.Errors) != 7 || d.ErrorsByCode[RowUnknownColumn] != 40 {
		t.Fatalf("atomic details %+v", d)
	}
}

func TestPartialAllRejected(t *testing.T) {
	res, herr := parse(t, ndjsonCT, `{"id":1}`+"\n"+`{"id":2}`, Options{Partial: true})
	if herr != nil {
		t.Fatal(herr)
	}
	if res.Accepted != 0 || res.Rejected != 2 || len(res.Segments) != 0 {
		t.Fatalf("%+v", res)
	}
}

func TestLongValueIsExcerpted(t *testing.T) {
	long := strings.Repeat("x", 5000)
	_, herr := parse(t, "application/json", `{"ts":"`+long+`","id":1,"`+long+`":1}`, Options{})
	d := rowErrorsOf(t, herr)
	for _, e := range d.Errors {
		if len(e.Message) > 300 || len(e.Column) > 100 {
			t.Fatalf("message of %d bytes: %.80s…", len(e.Message), e.Message)
		}
	}
}

func TestWideTableUsesIndex(t *testing.T) {
	var cols []store.Column
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		cols = append(cols, store.NewColumn(fmt.Sprintf("c%d", i), "UInt32", "", ""))
	}
	for i := 99; i >= 0; i-- { // reverse order defeats the position hint
		fmt.Fprintf(&b, `"c%d":%d`, i, i)
		if i > 0 {
			b.WriteString(",")
		}
	}
	b.WriteString("}")
	res, herr := Parse("application/json", "", strings.NewReader(b.String()), cols, Limits{}, Options{})
	if herr != nil {
		t.Fatal(herr)
	}
	var vals []int
	if err := json.Unmarshal(firstRow(t, res), &vals); err != nil || len(vals) != 100 || vals[42] != 42 {
		t.Fatalf("%v %v", vals, err)
	}
}

func TestResultOwnsItsMemory(t *testing.T) {
	body := `[{"ts":0,"id":1},{"ts":0,"id":2,"u8":3},{"ts":0,"id":3,"name":"x"}]`
	first, herr := parse(t, "application/json", body, Options{})
	if herr != nil {
		t.Fatal(herr)
	}
	want := strings.Join(rowsOf(first), "\n")
	if len(first.Segments) != 3 {
		t.Fatalf("want 3 segments, got %d", len(first.Segments))
	}
	// Later calls reuse pooled scratch space; the first result must not change.
	for i := range 20 {
		if _, herr := parse(t, ndjsonCT, fmt.Sprintf(`{"ts":1,"id":%d,"u8":9,"name":"zzzz"}`, i), Options{}); herr != nil {
			t.Fatal(herr)
		}
	}
	if got := strings.Join(rowsOf(first), "\n"); got != want {
		t.Fatalf("result changed after later calls:\n%s\nwant\n%s", got, want)
	}
}

func TestConcurrentParse(t *testing.T) {
	body := string(ndjson(200))
	want, herr := Parse(ndjsonCT, "", strings.NewReader(body), benchCols(), Limits{}, Options{})
	if herr != nil {
		t.Fatal(herr)
	}
	done := make(chan string, 8)
	for range 8 {
		go func() {
			res, herr := Parse(ndjsonCT, "", strings.NewReader(body), benchCols(), Limits{}, Options{})
			if herr != nil {
				done <- herr.Message
				return
			}
			done <- strings.Join(rowsOf(res), "\n")
		}()
	}
	for range 8 {
		if got := <-done; got != strings.Join(rowsOf(want), "\n") {
			t.Fatalf("concurrent Parse differs: %.200s", got)
		}
	}
}

// firstRow is the first accepted row as a canonical JSON array.
func firstRow(t *testing.T, res Result) []byte {
	t.Helper()
	if len(res.Segments) == 0 {
		t.Fatal("no segment")
	}
	rows, err := res.Segments[0].CanonicalRows()
	if err != nil || len(rows) == 0 {
		t.Fatalf("first segment does not read back: %v", err)
	}
	return rows[0]
}
