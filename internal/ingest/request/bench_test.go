package request

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/wavehouse/wavehouse/internal/store"
)

// benchCols is the 7-column table of the benchmarks and the fuzz target.
func benchCols() []store.Column {
	return []store.Column{
		store.NewColumn("ts", "DateTime", "", ""),
		store.NewColumn("id", "UInt64", "", ""),
		store.NewColumn("user_id", "UUID", "", ""),
		store.NewColumn("event", "LowCardinality(String)", "", ""),
		store.NewColumn("value", "Float64", "DEFAULT", "0"),
		store.NewColumn("tags", "Array(String)", "", ""),
		store.NewColumn("note", "Nullable(String)", "", ""),
	}
}

func benchRow(i int) string {
	return fmt.Sprintf(`{"ts":"2026-01-01 12:%02d:%02d","id":%d,"user_id":"b1e5c2a4-7d3f-4e21-9a8b-%012d","event":"click","value":%d.25,"tags":["a","b%d"],"note":null}`,
		i/60%60, i%60, 1<<40+i, i, i%1000, i%7)
}

func ndjson(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		b.WriteString(benchRow(i))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func gzipBytes(tb testing.TB, b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	if _, err := zw.Write(b); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return out.Bytes()
}

func zstdBytes(tb testing.TB, b []byte) []byte {
	zw, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		tb.Fatal(err)
	}
	defer zw.Close()
	return zw.EncodeAll(b, nil)
}

// textRows is ndjson(n) as CSV (with a header) or TSV (without), the way ClickHouse writes them.
func textRows(n int, tsv bool) []byte {
	var b bytes.Buffer
	if !tsv {
		b.WriteString("ts,id,user_id,event,value,tags,note\n")
	}
	for i := range n {
		row := fmt.Sprintf(`"2026-01-01 12:%02d:%02d",%d,"b1e5c2a4-7d3f-4e21-9a8b-%012d","click",%d.25,"['a','b%d']",\N`,
			i/60%60, i%60, 1<<40+i, i, i%1000, i%7)
		if tsv {
			row = strings.NewReplacer(",", "\t", `"`, "").Replace(row)
			row = strings.Replace(row, "'a'\t'b", "'a','b", 1)
		}
		b.WriteString(row)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

type benchCase struct {
	name, ct, ce string
	body         []byte
	raw          int
}

func benchCases(b *testing.B) []benchCase {
	one := []byte(benchRow(1))
	many := ndjson(1000)
	return []benchCase{
		{"1row", "application/json", "", one, len(one)},
		{"ndjson_1000", "application/x-ndjson", "", many, len(many)},
		{"ndjson_1000_gzip", "application/x-ndjson", "gzip", gzipBytes(b, many), len(many)},
		{"ndjson_1000_zstd", "application/x-ndjson", "zstd", zstdBytes(b, many), len(many)},
		{"csv_1000", "text/csv; header=present", "", textRows(1000, false), len(textRows(1000, false))},
		{"tsv_1000", "text/tab-separated-values; header=absent", "", textRows(1000, true), len(textRows(1000, true))},
	}
}

// BenchmarkParse measures Parse, the hand-written scanner. MB/s is of the decompressed body.
func BenchmarkParse(b *testing.B) {
	cols := benchCols()
	for _, c := range benchCases(b) {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(c.raw))
			b.ReportAllocs()
			r := bytes.NewReader(c.body)
			for b.Loop() {
				r.Reset(c.body)
				res, herr := Parse(c.ct, c.ce, r, cols, Limits{}, Options{})
				if herr != nil || res.Rejected != 0 {
					b.Fatalf("%+v %+v", herr, res.Errors)
				}
			}
		})
	}
}

// BenchmarkStdlib measures the candidate Parse was chosen against: encoding/json decoding each
// row into map[string]json.RawMessage (UseNumber semantics: values stay raw text), then chtype.
// It does the same work minus error reporting, so it is a lower bound for that approach.
func BenchmarkStdlib(b *testing.B) {
	cols := benchCols()
	for _, c := range benchCases(b) {
		if c.ce != "" || !strings.HasPrefix(c.ct, "application/") {
			continue
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(c.raw))
			b.ReportAllocs()
			for b.Loop() {
				if n, err := stdlibParse(bytes.NewReader(c.body), cols); err != nil || n == 0 {
					b.Fatal(n, err)
				}
			}
		})
	}
}

func stdlibParse(r io.Reader, cols []store.Column) (int, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var out []byte
	n := 0
	for {
		var row map[string]json.RawMessage
		if err := dec.Decode(&row); err == io.EOF {
			return n, nil
		} else if err != nil {
			return n, err
		}
		for k := range row {
			found := false
			for _, c := range cols {
				if c.Name == k {
					found = true
					break
				}
			}
			if !found {
				return n, fmt.Errorf("unknown column %q", k)
			}
		}
		out = append(out[:0], '[')
		for i, c := range cols {
			v, ok := row[c.Name]
			if !ok {
				v = json.RawMessage("null")
			}
			if i > 0 {
				out = append(out, ',')
			}
			var err error
			if out, err = c.Type.AppendCanonical(out, v); err != nil {
				return n, err
			}
		}
		out = append(out, ']')
		n++
	}
}

func TestStdlibCandidateAgrees(t *testing.T) {
	body := ndjson(50)
	n, err := stdlibParse(strings.NewReader(string(body)), benchCols())
	if err != nil || n != 50 {
		t.Fatalf("stdlib candidate: %d rows, %v", n, err)
	}
	res, herr := Parse("application/x-ndjson", "", bytes.NewReader(body), benchCols(), Limits{}, Options{})
	if herr != nil || res.Accepted != 50 {
		t.Fatalf("Parse: %+v %+v", res, herr)
	}
}

// TestBenchTextRowsAgree makes the CSV and TSV benchmarks do the NDJSON benchmark's work: the
// same rows, byte for byte.
func TestBenchTextRowsAgree(t *testing.T) {
	want, herr := Parse("application/x-ndjson", "", bytes.NewReader(ndjson(50)), benchCols(), Limits{}, Options{})
	if herr != nil {
		t.Fatal(herr)
	}
	for _, c := range []struct {
		ct   string
		body []byte
	}{{"text/csv; header=present", textRows(50, false)}, {"text/tab-separated-values; header=absent", textRows(50, true)}} {
		got, herr := Parse(c.ct, "", bytes.NewReader(c.body), benchCols(), Limits{}, Options{})
		if herr != nil || !reflect.DeepEqual(rowsOf(got), rowsOf(want)) {
			t.Fatalf("%s: %+v\n%s\nwant\n%s", c.ct, herr, strings.Join(rowsOf(got), "\n"), strings.Join(rowsOf(want), "\n"))
		}
	}
}
