package request

import (
	"bytes"
	"compress/zlib"
	"reflect"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/pierrec/lz4/v4"

	"github.com/wavehouse/wavehouse/internal/httpx"
)

func parseCH(t *testing.T, format, body string, opt Options) (Result, *httpx.Error) {
	t.Helper()
	f, ok := ClickHouseFormat(format)
	if !ok {
		t.Fatalf("format %s unknown", format)
	}
	return ParseFormat(f, "", strings.NewReader(body), textCols(), Limits{}, opt)
}

// TestClickHouseFormatsEqualJSON holds each ClickHouse-format body to the NDJSON body meaning
// the same rows: both must give the same segments.
func TestClickHouseFormatsEqualJSON(t *testing.T) {
	cols := []string{"id", "ts", "s"}
	want := `{"id":1,"ts":"2026-01-02 03:04:05","s":"a\tb"}` + "\n" + `{"id":2,"ts":"2026-01-02 03:04:06","s":"c"}`
	for _, tc := range []struct {
		format, body string
		cols         []string
	}{
		{"JSONEachRow", want, nil},
		{"jsoneachrow", want, nil},
		{"JSONCompactEachRow", `[1, "2026-01-02 03:04:05", "a\tb"]` + "\n" + `[2,"2026-01-02 03:04:06","c"]` + "\n", cols},
		{"JSONCompactEachRowWithNames", `["s","id","ts"]` + "\n" + `["a\tb",1,"2026-01-02 03:04:05"]` + "\n" + `["c",2,"2026-01-02 03:04:06"]`, nil},
		{"JSONCompactEachRowWithNamesAndTypes", `["s","id","ts"]` + "\n" + `["String","UInt64","DateTime( 'UTC')"]` + "\n" + `["a\tb",1,"2026-01-02 03:04:05"]` + "\n" + `["c",2,"2026-01-02 03:04:06"]`, nil},
		{"CSV", "1,2026-01-02 03:04:05,\"a\tb\"\n2,2026-01-02 03:04:06,c\n", cols},
		{"CSVWithNames", "ts,id,s\n2026-01-02 03:04:05,1,\"a\tb\"\n2026-01-02 03:04:06,2,c\n", nil},
		{"CSVWithNamesAndTypes", "ts,id,s\nDateTime('UTC'),UInt64,String\n2026-01-02 03:04:05,1,\"a\tb\"\n2026-01-02 03:04:06,2,c\n", nil},
		{"TabSeparated", "1\t2026-01-02 03:04:05\ta\\tb\n2\t2026-01-02 03:04:06\tc\n", cols},
		{"TSV", "1\t2026-01-02 03:04:05\ta\\tb\n2\t2026-01-02 03:04:06\tc\n", cols},
		{"TSVWithNames", "id\tts\ts\n1\t2026-01-02 03:04:05\ta\\tb\n2\t2026-01-02 03:04:06\tc\n", nil},
		{"TabSeparatedWithNamesAndTypes", "id\tts\ts\nUInt64\tDateTime('UTC')\tString\n1\t2026-01-02 03:04:05\ta\\tb\n2\t2026-01-02 03:04:06\tc\n", nil},
	} {
		res, herr := parseCH(t, tc.format, tc.body, Options{Columns: tc.cols})
		if herr != nil {
			t.Errorf("%s: %+v", tc.format, herr)
			continue
		}
		checkResult(t, res)
		ref, herr := parseText(t, ndjsonCT, want, Options{})
		if herr != nil {
			t.Fatal(herr)
		}
		if got, exp := rowsOf(res), rowsOf(ref); !reflect.DeepEqual(got, exp) {
			t.Errorf("%s:\n got %q\nwant %q", tc.format, got, exp)
		}
	}
}

// TestCSVWithoutHeader: ClickHouse's CSV has no header, so a first record of column names is
// data (and here a bad id), never a header.
func TestCSVWithoutHeader(t *testing.T) {
	_, herr := parseCH(t, "CSV", "id,ts,s\n", Options{Columns: []string{"id", "ts", "s"}})
	d := rowErrorsOf(t, herr)
	if len(d.Errors) != 2 || d.Errors[1].Column != "id" {
		t.Fatalf("got %+v", d.Errors)
	}
}

func TestColumnList(t *testing.T) {
	// The columns left out take their defaults; a key outside the list is refused.
	res, herr := parseCH(t, "JSONEachRow", `{"id":1,"ts":0,"s":"x"}`, Options{Columns: []string{"ts", "id", "s"}})
	if herr != nil {
		t.Fatal(herr)
	}
	if got := rowsOf(res); len(got) != 1 || !strings.HasPrefix(got[0], "ts,id,s,n,lc: ") {
		t.Fatalf("got %q", got)
	}
	_, herr = parseCH(t, "JSONEachRow", `{"id":1,"ts":0,"s":"x","note":"y"}`, Options{Columns: []string{"ts", "id", "s"}})
	d := rowErrorsOf(t, herr)
	if d.Errors[0].Column != "note" || d.Errors[0].Code != RowUnknownColumn || !strings.Contains(d.Errors[0].Message, "column list") {
		t.Fatalf("got %+v", d.Errors)
	}
	_, herr = parseCH(t, "CSVWithNames", "id,ts,s,note\n1,0,x,y\n", Options{Columns: []string{"ts", "id", "s"}})
	if d := rowErrorsOf(t, herr); d.Errors[0].Column != "note" {
		t.Fatalf("got %+v", d.Errors)
	}
	for _, list := range [][]string{{"id", "nope"}, {"id", "id"}, {"mat"}, {}} {
		_, herr := parseCH(t, "CSV", "1\n", Options{Columns: list})
		if herr == nil || herr.Code != CodeInvalidColumns || herr.Status != 400 {
			t.Errorf("%q: got %+v", list, herr)
		}
	}
}

func TestCompactRowErrors(t *testing.T) {
	cols := []string{"id", "ts", "s"}
	_, herr := parseCH(t, "JSONCompactEachRow", `[1,0,"a"]`+"\n"+`[2,0]`+"\n"+`{"id":3}`+"\n"+`[-4,0,"x"]`, Options{Columns: cols})
	d := rowErrorsOf(t, herr)
	var codes []string
	for _, e := range d.Errors {
		codes = append(codes, e.Code)
	}
	if !reflect.DeepEqual(codes, []string{RowFieldCount, RowNotAnArray, "out_of_range"}) || d.Errors[2].Row != 3 || d.Errors[2].Column != "id" {
		t.Fatalf("got %+v", d.Errors)
	}
	if _, herr := parseCH(t, "JSONCompactEachRow", `[1,0,"a"] [2,0,"b"]`, Options{Columns: cols}); herr == nil || herr.Code != CodeMalformedJSON {
		t.Fatalf("two rows on a line: %+v", herr)
	}
	if _, herr := parseCH(t, "JSONCompactEachRowWithNames", `[1,2]`, Options{}); herr == nil || herr.Code != CodeMalformedHeader {
		t.Fatalf("names of numbers: %+v", herr)
	}
	if _, herr := parseCH(t, "JSONCompactEachRowWithNamesAndTypes", `["id"]`, Options{}); herr == nil || herr.Code != CodeMalformedHeader {
		t.Fatalf("no types record: %+v", herr)
	}
}

func TestTypesMismatch(t *testing.T) {
	for format, body := range map[string]string{
		"JSONCompactEachRowWithNamesAndTypes": `["id","s"]` + "\n" + `["UInt32","String"]` + "\n" + `[1,"a"]`,
		"CSVWithNamesAndTypes":                "id,s\nUInt32,String\n1,a\n",
		"TSVWithNamesAndTypes":                "id\ts\nUInt32\tString\n1\ta\n",
	} {
		_, herr := parseCH(t, format, body, Options{})
		if herr == nil || herr.Code != CodeTypesMismatch || !strings.Contains(herr.Message, `column "id": the body says UInt32, the table has UInt64`) {
			t.Errorf("%s: got %+v", format, herr)
		}
	}
	if _, herr := parseCH(t, "CSVWithNamesAndTypes", "id,s\nUInt64\n1,a\n", Options{}); herr == nil || herr.Code != CodeTypesMismatch {
		t.Errorf("short types record: %+v", herr)
	}
}

func TestEncodings(t *testing.T) {
	body := []byte(`{"id":1,"ts":0,"s":"x"}` + "\n")
	var lz, zl, br bytes.Buffer
	lw := lz4.NewWriter(&lz)
	_, _ = lw.Write(body)
	_ = lw.Close()
	zw := zlib.NewWriter(&zl)
	_, _ = zw.Write(body)
	_ = zw.Close()
	bw := brotli.NewWriter(&br)
	_, _ = bw.Write(body)
	_ = bw.Close()
	for enc, data := range map[string][]byte{"lz4": lz.Bytes(), "deflate": zl.Bytes(), "br": br.Bytes()} {
		res, herr := Parse(ndjsonCT, enc, bytes.NewReader(data), textCols(), Limits{}, Options{})
		if herr != nil || res.Accepted != 1 {
			t.Errorf("%s: %+v %+v", enc, res, herr)
		}
		if _, herr := Parse(ndjsonCT, enc, bytes.NewReader(body), textCols(), Limits{}, Options{}); herr == nil || herr.Code != CodeCorruptBody {
			t.Errorf("%s, not compressed: %+v", enc, herr)
		}
		out, herr := Decode(enc, data, Limits{})
		if herr != nil || !bytes.Equal(out, body) {
			t.Errorf("Decode %s: %q %+v", enc, out, herr)
		}
		if _, herr := Decode(enc, data, Limits{MaxBodyBytes: 5}); herr == nil || herr.Code != CodeBodyTooLarge {
			t.Errorf("Decode %s over the limit: %+v", enc, herr)
		}
	}
}
