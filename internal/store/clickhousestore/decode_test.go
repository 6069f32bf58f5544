package clickhousestore

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
)

func parseTypes(t testing.TB, names ...string) []*chtype.Type {
	t.Helper()
	out := make([]*chtype.Type, len(names))
	for i, n := range names {
		ty, err := chtype.Parse(n)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = ty
	}
	return out
}

func rowsOf(rows ...string) [][]byte {
	out := make([][]byte, len(rows))
	for i, r := range rows {
		out[i] = []byte(r)
	}
	return out
}

var decodeTypes = []string{"UInt64", "String", "Nullable(String)", "Array(String)", "DateTime", "Float64",
	"LowCardinality(String)", "Array(Array(String))", "Nullable(Int8)", "UUID"}

// checkDecoded compares every decoded value with chtype.ToDriver of the same element.
func checkDecoded(t *testing.T, d *decoder, types []*chtype.Type, rows [][]byte) {
	t.Helper()
	for ri, row := range rows {
		_, err := chtype.SplitArray(row, func(ci int, elem []byte) error {
			want, err := types[ci].ToDriver(elem)
			if err != nil {
				t.Fatalf("row %d col %d: ToDriver: %v", ri, ci, err)
			}
			got := reflect.ValueOf(d.builders[ci].values()).Index(ri).Interface()
			if !sameValue(got, want) {
				t.Errorf("row %d col %d (%s): decoded %#v, ToDriver %#v", ri, ci, types[ci].Name, got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestDecodeRows(t *testing.T) {
	types := parseTypes(t, decodeTypes...)
	rows := rowsOf(
		`[1,"plain",null,[],"2024-01-02 03:04:05",1.5,"lc",[],null,"6f9619ff-8b86-d011-b42d-00cf4fc964ff"]`,
		` [ 18446744073709551615 , "esc\"aped\\\n\t\u00e9\ud83d\ude00" , "ünï日本" , ["a","b\"c",""] , "2106-02-07 06:28:15" , -0.0 , "l\u0063" , [["x"],[]] , -128 , "6F9619FF8B86D011B42D00CF4FC964FF" ] `,
		`[0,"","",["\ud83d"],1700000000,"2",""  ,[[]],"7","00000000-0000-0000-0000-000000000000"]`,
	)
	d := newDecoder(types, len(rows))
	if err := d.decode(store.Batch{Columns: decodeTypes, Rows: rows}); err != nil {
		t.Fatal(err)
	}
	checkDecoded(t, d, types, rows)
	if got := d.builders[1].values().([]string)[1]; got != "esc\"aped\\\n\té😀" {
		t.Errorf("escaped string decoded as %q", got)
	}

	// A reused decoder forgets the previous batch and decodes the next one alike.
	d.reset()
	for i, b := range d.builders {
		if n := reflect.ValueOf(b.values()).Len(); n != 0 {
			t.Fatalf("builder %d holds %d values after reset", i, n)
		}
	}
	rows2 := [][]byte{rows[2], rows[0]}
	if err := d.decode(store.Batch{Columns: decodeTypes, Rows: rows2}); err != nil {
		t.Fatal(err)
	}
	checkDecoded(t, d, types, rows2)
}

func TestDecodeRowsRefusesBadInput(t *testing.T) {
	cols := []string{"id", "name", "tags", "ts"}
	types := parseTypes(t, "UInt64", "String", "Array(String)", "DateTime")
	good := `[1,"a",["x"],"2024-01-02 03:04:05"]`
	cases := []struct {
		row    string
		column string // "" for a row-level error
		code   chtype.Code
	}{
		{`[-1,"a",["x"],"2024-01-02 03:04:05"]`, "id", chtype.CodeOutOfRange},
		{`[1,2,["x"],"2024-01-02 03:04:05"]`, "name", chtype.CodeTypeMismatch},
		{`[1,"a\q",["x"],"2024-01-02 03:04:05"]`, "name", chtype.CodeTypeMismatch},
		{`[1,null,["x"],"2024-01-02 03:04:05"]`, "name", chtype.CodeNullNotAllowed},
		{`[1,"a",["x",3],"2024-01-02 03:04:05"]`, "tags", chtype.CodeTypeMismatch},
		{`[1,"a","x","2024-01-02 03:04:05"]`, "tags", chtype.CodeTypeMismatch},
		{`[1,"a",["x"],"2024-02-30 03:04:05"]`, "ts", chtype.CodeInvalidValue},
		{`[1,"a",["x"]]`, "", ""},
		{`[1,"a",["x"],"2024-01-02 03:04:05",5]`, "", ""},
		{`[1,"a",["x"],"2024-01-02 03:04:05"`, "", ""},
		{`{"id":1}`, "", ""},
		{``, "", ""},
		{`[1,"a",["x"],"2024-01-02 03:04:05"] [`, "", ""},
		{`[1,"a,["x"],"2024-01-02 03:04:05"]`, "", ""},
	}
	for _, c := range cases {
		d := newDecoder(types, 2)
		err := d.decode(store.Batch{Columns: cols, Rows: rowsOf(good, c.row)})
		var re *store.RowError
		if !errors.As(err, &re) || !errors.Is(err, store.ErrRejected) {
			t.Errorf("%s: got %v, want a rejected *store.RowError", c.row, err)
			continue
		}
		if re.Row != 1 || re.Column != c.column {
			t.Errorf("%s: error names row %d column %q, want row 1 column %q (%v)", c.row, re.Row, re.Column, c.column, err)
		}
		var ve *chtype.Error
		if c.code != "" && (!errors.As(err, &ve) || ve.Code != c.code) {
			t.Errorf("%s: got %v, want code %s", c.row, err, c.code)
		}
	}
}

// TestDecodeRowsNoAllocs holds a reused decoder to decoding canonical rows without allocating:
// strings are views of the rows, nullable values live in one slab, arrays in another.
func TestDecodeRowsNoAllocs(t *testing.T) {
	types, batch := benchBatch(t)
	d := newDecoder(types, len(batch.Rows))
	allocs := testing.AllocsPerRun(5, func() {
		d.reset()
		if err := d.decode(batch); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("decoding %d rows allocated %v times", len(batch.Rows), allocs)
	}
}

// FuzzDecodeRows feeds arbitrary rows to the decoder: it must never panic, must refuse with a
// rejected *store.RowError, and must decode an accepted row exactly as ToDriver converts it.
func FuzzDecodeRows(f *testing.F) {
	for _, s := range []string{
		`[1,"a",null,["x"],"2024-01-02 03:04:05",1.5,"lc",[["y"]],3,"6f9619ff-8b86-d011-b42d-00cf4fc964ff"]`,
		`[1,"a\n",null,[],1,1,"",[],null,"6f9619ff8b86d011b42d00cf4fc964ff"]`,
		`[1,"a"]`, `[`, `[1,"a",null,["x",],"2024-01-02 03:04:05",1.5,"lc",[],3,""]`,
	} {
		f.Add([]byte(s))
	}
	types := parseTypes(f, decodeTypes...)
	f.Fuzz(func(t *testing.T, row []byte) {
		d := newDecoder(types, 1)
		err := d.decode(store.Batch{Columns: decodeTypes, Rows: [][]byte{row}})
		if err != nil {
			var re *store.RowError
			if !errors.As(err, &re) || !errors.Is(err, store.ErrRejected) || re.Row != 0 {
				t.Fatalf("%q: %v is not a rejected *store.RowError for row 0", row, err)
			}
			return
		}
		checkDecoded(t, d, types, [][]byte{row})
	})
}

// benchBatch is the 10k-row batch of the insert benchmarks, with its column types.
func benchBatch(t testing.TB) ([]*chtype.Type, store.Batch) {
	rows := make([][]byte, 10000)
	for i := range rows {
		tag := "null"
		if i%3 != 0 {
			tag = fmt.Sprintf(`"tag-%d"`, i%10)
		}
		rows[i] = fmt.Appendf(nil, `[%d,"2024-01-02 03:%02d:%02d","event-name-%d",%d,%d.25,%s,["a","b%d"]]`,
			i, i/60%60, i%60, i%100, i*7, i, tag, i%5)
	}
	types := parseTypes(t, "UInt64", "DateTime", "String", "UInt32", "Float64", "Nullable(String)", "Array(String)")
	return types, store.Batch{Table: "ev", Columns: []string{"id", "ts", "name", "n", "v", "tag", "arr"}, Rows: rows}
}

// BenchmarkDecode measures the client-side decode of a 10k-row batch alone (no server, no
// driver), with a reused decoder as Insert uses it.
func BenchmarkDecode(b *testing.B) {
	types, batch := benchBatch(b)
	var pool decoderPool
	b.SetBytes(int64(batch.Bytes()))
	b.ReportAllocs()
	for b.Loop() {
		d, key := pool.get(types, len(batch.Rows))
		if err := d.decode(batch); err != nil {
			b.Fatal(err)
		}
		pool.put(key, d)
	}
}
