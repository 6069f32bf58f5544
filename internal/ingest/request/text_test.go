package request

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/store"
)

const (
	csvCT = "text/csv"
	tsvCT = "text/tab-separated-values"
)

// textCols is a table with the types whose text forms differ from JSON.
func textCols() []store.Column {
	return []store.Column{
		store.NewColumn("ts", "DateTime('UTC')", "", ""),
		store.NewColumn("id", "UInt64", "", ""),
		store.NewColumn("s", "String", "", ""),
		store.NewColumn("n", "Nullable(Int32)", "", ""),
		store.NewColumn("dec", "Decimal(9, 2)", "DEFAULT", "0"),
		store.NewColumn("b", "Bool", "DEFAULT", "false"),
		store.NewColumn("e", "Enum8('a' = 1, 'b' = 2)", "DEFAULT", "'a'"),
		store.NewColumn("arr", "Array(Nullable(Int32))", "DEFAULT", "[]"),
		store.NewColumn("tags", "Array(String)", "DEFAULT", "[]"),
		store.NewColumn("m", "Map(String, UInt8)", "DEFAULT", "map()"),
		store.NewColumn("tup", "Tuple(Int32, String)", "DEFAULT", "(0, '')"),
		store.NewColumn("note", "Nullable(String)", "DEFAULT", "'x'"),
		store.NewColumn("lc", "LowCardinality(Nullable(String))", "", ""),
		store.NewColumn("mat", "UInt8", "MATERIALIZED", "1"),
	}
}

func parseText(t *testing.T, ct, body string, opt Options) (Result, *httpx.Error) {
	t.Helper()
	return Parse(ct, "", strings.NewReader(body), textCols(), Limits{}, opt)
}

// TestTextEqualsJSON holds each CSV or TSV body to the NDJSON body that means the same rows:
// both must give byte-identical segments, so text rows get exactly JSON's validation, defaults
// and canonical encoding.
func TestTextEqualsJSON(t *testing.T) {
	tests := []struct {
		name, ct, body, ndjson string
	}{
		{"csv header present, any order, subset", csvCT + "; header=present",
			"id,ts,s\n1,2026-01-02 03:04:05,alice\n2,2026-01-02 03:04:06,bob\n",
			`{"id":1,"ts":"2026-01-02 03:04:05","s":"alice"}` + "\n" + `{"id":2,"ts":"2026-01-02 03:04:06","s":"bob"}`},
		{"csv quoting: delimiter, doubled quotes, embedded LF and CRLF", csvCT + "; header=present",
			"ts,id,s\r\n0,1,\"a,b \"\"q\"\" \nline\r\nthree\"\r\n0,2,\"\"\r\n",
			`{"ts":0,"id":1,"s":"a,b \"q\" \nline\r\nthree"}` + "\n" + `{"ts":0,"id":2,"s":""}`},
		{"csv blanks around unquoted and quoted fields are trimmed, inside quotes kept", csvCT + "; header=present",
			"ts , id,s\n 0 ,\t1 ,  \" x \"  \n",
			`{"ts":0,"id":1,"s":" x "}`},
		{"csv NULL and empty fields", csvCT + "; header=present",
			// \N is NULL; an empty unquoted field is the DEFAULT (or NULL when Nullable); "" is ''.
			"ts,id,s,n,note,lc,dec,b\n0,1,,\\N,\\N,,,\n0,2,\"\",,,\"\\N\",\\N,\"true\"\n",
			`{"ts":0,"id":1,"s":"","n":null,"note":null,"lc":null}` + "\n" + `{"ts":0,"id":2,"s":"","lc":"\\N","b":true}`},
		{"csv numbers, booleans, enums, dates", csvCT + "; header=present",
			"ts,id,s,n,dec,b,e\n1700000000,+7,x,-5,\"12.5\",TRUE,b\n2026-01-02T03:04:05Z,\"8\",y,0,-0.01,0,2\n",
			`{"ts":1700000000,"id":7,"s":"x","n":-5,"dec":"12.5","b":true,"e":"b"}` + "\n" +
				`{"ts":"2026-01-02T03:04:05Z","id":8,"s":"y","n":0,"dec":-0.01,"b":false,"e":2}`},
		{"csv arrays, maps and tuples as ClickHouse writes them", csvCT + "; header=present",
			"ts,id,s,arr,tags,m,tup\n0,1,x,\"[1,NULL,-3]\",\"['a','b''c','d\\'e', \"\"q\"\"]\",\"{'k':1,'l':2}\",\"(5,'five')\"\n0,2,y,[],[],{},\"(0,'')\"\n",
			`{"ts":0,"id":1,"s":"x","arr":[1,null,-3],"tags":["a","b'c","d'e","q"],"m":{"k":1,"l":2},"tup":[5,"five"]}` + "\n" +
				`{"ts":0,"id":2,"s":"y","arr":[],"tags":[],"m":{},"tup":[0,""]}`},
		{"csv header absent: every insertable column in table order", csvCT + "; header=absent",
			"0,1,x,,,,,,,,,,\n0,2,y,3,1.5,true,b,[1],['t'],{'k':1},\"(1,'a')\",n,lc\n",
			`{"ts":0,"id":1,"s":"x"}` + "\n" +
				`{"ts":0,"id":2,"s":"y","n":3,"dec":1.5,"b":true,"e":"b","arr":[1],"tags":["t"],"m":{"k":1},"tup":[1,"a"],"note":"n","lc":"lc"}`},
		{"csv header auto: a first line of column names is the header", csvCT,
			"s,id,ts\nx,1,0\n", `{"s":"x","id":1,"ts":0}`},
		{"csv header auto: a first line that is not all column names is data", csvCT + "; header=auto",
			"0,1,x,,,,,,,,,,\n", `{"ts":0,"id":1,"s":"x"}`},
		{"csv delimiter parameter", csvCT + `; header=present; delimiter=";"`,
			"ts;id;s;tags\n0;1;a,b;\"['x','y']\"\n", `{"ts":0,"id":1,"s":"a,b","tags":["x","y"]}`},
		{"csv tab delimiter keeps tabs inside fields untrimmed", csvCT + "; header=present; delimiter=\"\t\"",
			"ts\tid\ts\n0\t1\t x \n", `{"ts":0,"id":1,"s":"x"}`},
		{"csv lone CR line ends and trailing blank lines", csvCT + "; header=present",
			"ts,id,s\r0,1,a\r0,2,b\r\n\r\n\n", `{"ts":0,"id":1,"s":"a"}` + "\n" + `{"ts":0,"id":2,"s":"b"}`},
		{"csv last line without a line break", csvCT + "; header=present",
			"ts,id,s\n0,1,a", `{"ts":0,"id":1,"s":"a"}`},
		{"charset parameter is ignored", csvCT + "; charset=utf-8; header=present",
			"ts,id,s\n0,1,日本語\n", `{"ts":0,"id":1,"s":"日本語"}`},

		{"tsv escapes", tsvCT + "; header=present",
			"ts\tid\ts\n0\t1\ttab\\there\\\\back\\nLF\\rCR\\0nul\\'q\\\"dq\\x41\\a\\b\\f\\v\\zz\n",
			`{"ts":0,"id":1,"s":"tab\there\\back\nLF\rCR\u0000nul'q\"dqA\u0007\b\f\u000bzz"}`},
		{"tsv backslash line break is a line feed (MySQL dumps)", tsvCT + "; header=present",
			"ts\tid\ts\n0\t1\tone\\\ntwo\n0\t2\tx\n", `{"ts":0,"id":1,"s":"one\ntwo"}` + "\n" + `{"ts":0,"id":2,"s":"x"}`},
		{"tsv NULL, empty and literal \\N", tsvCT + "; header=present",
			"ts\tid\ts\tn\tnote\tlc\tdec\n0\t1\t\t\\N\t\\N\t\\\\N\t\\N\n",
			`{"ts":0,"id":1,"s":"","n":null,"note":null,"lc":"\\N","dec":null}`},
		{"tsv arrays keep their own escapes", tsvCT + "; header=present",
			"ts\tid\ts\ttags\tm\ttup\n0\t1\tx\t['a\\'b','c\\td','\\\\']\t{'k\\'':7}\t(1,'x\\ty')\n",
			`{"ts":0,"id":1,"s":"x","tags":["a'b","c\td","\\"],"m":{"k'":7},"tup":[1,"x\ty"]}`},
		{"tsv CRLF line ends", tsvCT + "; header=present", "ts\tid\ts\r\n0\t1\ta\r\n0\t2\tb\r\n",
			`{"ts":0,"id":1,"s":"a"}` + "\n" + `{"ts":0,"id":2,"s":"b"}`},
		{"tsv a lone CR is data", tsvCT + "; header=present", "ts\tid\ts\n0\t1\ta\rb\n", `{"ts":0,"id":1,"s":"a\rb"}`},
		{"tsv header absent", tsvCT + "; header=absent",
			"0\t1\tx\t\\N\t1.25\tfalse\ta\t[NULL]\t[]\t{}\t(2,'b')\t\\N\t\\N\n",
			`{"ts":0,"id":1,"s":"x","n":null,"dec":1.25,"b":false,"e":"a","arr":[null],"tags":[],"m":{},"tup":[2,"b"],"note":null,"lc":null}`},
		{"tsv header auto detects names", tsvCT, "id\tts\ts\n1\t0\tx\n", `{"id":1,"ts":0,"s":"x"}`},
		{"tsv header auto reads other first lines as data", tsvCT,
			"0\t1\tx\t\\N\t0\t0\ta\t[]\t[]\t{}\t(0,'')\t\\N\t\\N\n",
			`{"ts":0,"id":1,"s":"x","n":null,"dec":0,"b":false,"e":"a","arr":[],"tags":[],"m":{},"tup":[0,""],"note":null,"lc":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, partial := range []bool{false, true} {
				got, herr := parseText(t, tc.ct, tc.body, Options{Partial: partial})
				if herr != nil {
					t.Fatalf("text: %s %s %+v", herr.Code, herr.Message, herr.Details)
				}
				checkResult(t, got)
				want, herr := parseText(t, ndjsonCT, tc.ndjson, Options{Partial: partial})
				if herr != nil {
					t.Fatalf("ndjson: %s %s", herr.Code, herr.Message)
				}
				if got.Rejected != 0 || !reflect.DeepEqual(rowsOf(got), rowsOf(want)) {
					t.Fatalf("text rows\n%s\nwant (from NDJSON)\n%s\nerrors %+v", strings.Join(rowsOf(got), "\n"), strings.Join(rowsOf(want), "\n"), got.Errors)
				}
			}
		})
	}
}

// TestTextBadRowPerMode puts one bad row between good ones in each format and header mode: an
// atomic request is refused with the row (0-based, header excluded), its body line, the column
// and a stable code; a partial one accepts the good rows and reports the same error.
func TestTextBadRowPerMode(t *testing.T) {
	type bad struct {
		row, line    int
		column, code string
	}
	tests := []struct {
		name, ct, body string
		want           []bad
	}{
		{"csv present: bad integer", csvCT + "; header=present", "ts,id,s\n0,1,a\n0,x,\"multi\nline\"\n0,3,c\n",
			[]bad{{1, 3, "id", "invalid_value"}}},
		{"csv present: row after a multi-line field", csvCT + "; header=present", "ts,id,s\n0,1,\"a\nb\nc\"\n0,2,b\n0,3,\"c\"\"\"\n0,300000000000000000000,d\n",
			[]bad{{3, 7, "id", "out_of_range"}}},
		{"csv present: too many fields", csvCT + "; header=present", "ts,id,s\n0,1,a\n0,2,b,extra\n0,3,c\n",
			[]bad{{1, 3, "", RowFieldCount}}},
		{"csv absent: too few fields", csvCT + "; header=absent", "0,1,a,,,,,,,,,,\n0,2,b\n0,3,c,,,,,,,,,,\n",
			[]bad{{1, 2, "", RowFieldCount}}},
		{"csv absent: NULL into a required column", csvCT + "; header=absent", "0,1,a,,,,,,,,,,\n\\N,2,b,,,,,,,,,,\n0,3,c,,,,,,,,,,\n",
			[]bad{{1, 2, "ts", "null_not_allowed"}}},
		{"csv auto: bad array element", csvCT, "ts,id,s,arr\n0,1,a,[1]\n0,2,b,\"[1,'x']\"\n0,3,c,[]\n",
			[]bad{{1, 3, "arr", "invalid_value"}}},
		{"csv auto: malformed array literal", csvCT, "ts,id,s,arr\n0,1,a,[1]\n0,2,b,\"[1,2\"\n0,3,c,[]\n",
			[]bad{{1, 3, "arr", "invalid_value"}}},
		{"csv auto: empty required number", csvCT, "ts,id,s\n0,1,a\n0,,b\n0,3,c\n",
			[]bad{{1, 3, "id", "invalid_value"}}},
		{"tsv present: bad enum", tsvCT + "; header=present", "ts\tid\ts\te\n0\t1\ta\ta\n0\t2\tb\tzz\n0\t3\tc\t2\n",
			[]bad{{1, 3, "e", "invalid_value"}}},
		{"tsv present: escaped line break moves the line", tsvCT + "; header=present", "ts\tid\ts\n0\t1\ta\\\nb\n0\t-2\tb\n0\t3\tc\n",
			[]bad{{1, 4, "id", "out_of_range"}}},
		{"tsv absent: too many fields", tsvCT + "; header=absent", "0\t1\ta\t\\N\t0\t0\ta\t[]\t[]\t{}\t(0,'')\t\\N\t\\N\n0\t2\n0\t3\tc\t\\N\t0\t0\ta\t[]\t[]\t{}\t(0,'')\t\\N\t\\N\n",
			[]bad{{1, 2, "", RowFieldCount}}},
		{"tsv auto: bad date and a blank line is a row", tsvCT, "ts\tid\ts\n0\t1\ta\nyesterday\t2\tb\n\n0\t3\tc\n",
			[]bad{{1, 3, "ts", "invalid_value"}, {2, 4, "", RowFieldCount}}},
		{"tsv auto: empty is not a number in TSV", tsvCT, "ts\tid\ts\n0\t1\ta\n0\t\tb\n0\t3\tc\n",
			[]bad{{1, 3, "id", "invalid_value"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			total := strings.Count(strings.TrimRight(tc.body, "\n"), "\n") + 1
			_, herr := parseText(t, tc.ct, tc.body, Options{})
			d := rowErrorsOf(t, herr)
			rejected := map[int]bool{}
			for _, w := range tc.want {
				rejected[w.row] = true
			}
			check := func(errs []RowError) {
				t.Helper()
				if len(errs) != len(tc.want) {
					t.Fatalf("errors %+v, want %+v", errs, tc.want)
				}
				for i, w := range tc.want {
					g := errs[i]
					if g.Row != w.row || g.Line != w.line || g.Column != w.column || g.Code != w.code {
						t.Fatalf("error %d: got {row %d line %d %q %s} (%s), want %+v", i, g.Row, g.Line, g.Column, g.Code, g.Message, w)
					}
				}
			}
			check(d.Errors)
			if !strings.Contains(herr.Message, fmt.Sprintf("(line %d)", tc.want[0].line)) {
				t.Fatalf("message %q does not give the line", herr.Message)
			}
			res, herr := parseText(t, tc.ct, tc.body, Options{Partial: true})
			if herr != nil {
				t.Fatalf("partial: %+v", herr)
			}
			checkResult(t, res)
			check(res.Errors)
			if res.Rejected != len(rejected) || res.Accepted < 2 || res.Accepted+res.Rejected > total {
				t.Fatalf("partial counts %+v", res)
			}
		})
	}
}

// TestTextHeaderErrors: a header is the keys of every row, so its problems are every row's
// problems, with JSON's codes; a partial request then has no valid row.
func TestTextHeaderErrors(t *testing.T) {
	tests := []struct {
		name, header, column, code string
	}{
		{"unknown column", "ts,id,s,nope", "nope", RowUnknownColumn},
		{"materialized column", "ts,id,s,mat", "mat", RowNotWritable},
		{"duplicate column", "ts,id,s,id", "id", RowDuplicateColumn},
		{"missing required column", "ts,id,note", "s", RowMissingColumn},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.header + "\n0,1,a,1\n0,2,b,2\n"
			if strings.Count(tc.header, ",") == 2 {
				body = tc.header + "\n0,1,a\n0,2,b\n"
			}
			_, herr := parseText(t, csvCT+"; header=present", body, Options{})
			d := rowErrorsOf(t, herr)
			if d.Total != 2 || d.Rejected != 2 || len(d.Errors) != 2 {
				t.Fatalf("details %+v", d)
			}
			for i, e := range d.Errors {
				if e.Row != i || e.Line != i+2 || e.Column != tc.column || e.Code != tc.code {
					t.Fatalf("error %d: %+v, want row %d line %d column %q code %s", i, e, i, i+2, tc.column, tc.code)
				}
			}
		})
	}
	// With header=auto a header naming an unknown column is data, refused by type.
	_, herr := parseText(t, csvCT, "ts,id,nope\n0,1,a\n", Options{})
	if d := rowErrorsOf(t, herr); d.Errors[0].Row != 0 || d.Errors[0].Line != 1 || d.Errors[0].Code != RowFieldCount {
		t.Fatalf("auto with an unknown name: %+v", d.Errors)
	}
}

func TestTextMalformed(t *testing.T) {
	tests := []struct {
		name, ct, body string
		code           string
		row, line, off int
		msg            string
	}{
		{"unclosed quote", csvCT, "ts,id,s\n0,1,a\n0,2,\"open\nnever closed\n", CodeMalformedCSV, 1, 3, 18, "not closed"},
		{"junk after closing quote", csvCT + "; header=absent", "0,1,\"a\"b\n", CodeMalformedCSV, 0, 1, 7, "after a closing quote"},
		{"unclosed quote in the header", csvCT, "\"ts,id\n", CodeMalformedCSV, 0, 1, 0, "not closed"},
		{"trailing backslash", tsvCT, "ts\tid\ts\n0\t1\ta\\", CodeMalformedTSV, 0, 2, 13, "backslash"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, herr := parseText(t, tc.ct, tc.body, Options{Partial: true})
			if herr == nil || herr.Status != 400 || herr.Code != tc.code {
				t.Fatalf("want 400 %s, got %+v", tc.code, herr)
			}
			d := herr.Details.(map[string]int)
			if d["row"] != tc.row || d["line"] != tc.line || d["offset"] != tc.off || !strings.Contains(herr.Message, tc.msg) {
				t.Fatalf("got %v %q, want row %d line %d offset %d and %q", d, herr.Message, tc.row, tc.line, tc.off, tc.msg)
			}
		})
	}
}

func TestTextMediaTypes(t *testing.T) {
	for _, ct := range []string{
		"text/csv; header=maybe", "text/csv; delimiter=ab", `text/csv; delimiter="\""`, "text/csv; delimiter=\"\n\"",
		"text/tab-separated-values; delimiter=,", "text/csv; header=present; header=absent", "text/csv; header",
	} {
		_, herr := parseText(t, ct, "ts,id,s\n0,1,a\n", Options{})
		if herr == nil || herr.Status != 415 || herr.Code != CodeUnsupportedMediaType {
			t.Errorf("%q: want 415 %s, got %+v", ct, CodeUnsupportedMediaType, herr)
		}
	}
	for _, ct := range []string{"TEXT/CSV; Header=Present", "text/csv;header=present;", "text/csv; header=\"present\""} {
		res, herr := parseText(t, ct, "ts,id,s\n0,1,a\n", Options{})
		if herr != nil || res.Accepted != 1 {
			t.Errorf("%q: %+v %+v", ct, res, herr)
		}
	}
	for _, ct := range []string{"application/jsonl", "application/jsonlines", "application/x-jsonlines", "Application/JSONLines; charset=utf-8"} {
		res, herr := parseText(t, ct, `{"ts":0,"id":1,"s":"a"}`+"\n"+`{"ts":0,"id":2,"s":"b"}`, Options{})
		if herr != nil || res.Accepted != 2 {
			t.Errorf("%q: %+v %+v", ct, res, herr)
		}
	}
}

func TestTextLimitsAndEmpty(t *testing.T) {
	for _, body := range []string{"", "\n\r\n", "ts,id,s\n", "ts,id,s\n\n"} {
		if _, herr := parseText(t, csvCT, body, Options{}); herr == nil || herr.Code != CodeEmptyBody {
			t.Errorf("%q: want %s, got %+v", body, CodeEmptyBody, herr)
		}
	}
	// The header is not a row: two rows fit a limit of two.
	body := "ts,id,s\n0,1,a\n0,2,b\n"
	res, herr := Parse(csvCT, "", strings.NewReader(body), textCols(), Limits{MaxRows: 2}, Options{})
	if herr != nil || res.Accepted != 2 {
		t.Fatalf("two rows under a limit of two: %+v %+v", res, herr)
	}
	if _, herr := Parse(csvCT, "", strings.NewReader(body+"0,3,c\n"), textCols(), Limits{MaxRows: 2}, Options{}); herr == nil || herr.Code != CodeTooManyRows {
		t.Fatalf("three rows: want %s, got %+v", CodeTooManyRows, herr)
	}
	// Compressed text bodies decode like JSON ones.
	res, herr = Parse(tsvCT, "gzip", strings.NewReader(string(gzipBytes(t, []byte("ts\tid\ts\n0\t1\ta\n")))), textCols(), Limits{}, Options{})
	if herr != nil || res.Accepted != 1 {
		t.Fatalf("gzip TSV: %+v %+v", res, herr)
	}
}
