package chformat

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// rbNames and rbTypes are the columns of the RowBinary seeds: every composite RowBinary has.
var rbNames = []string{"i", "s", "n", "a", "t", "m", "lc"}
var rbTypes = []string{"Int32", "String", "Nullable(String)", "Array(Nullable(UInt8))", "Tuple(Int8, String)", "Map(String, Int16)", "LowCardinality(String)"}

// rbBody is two RowBinary rows of rbTypes.
func rbBody() []byte {
	var b []byte
	b = append(b, 1, 0, 0, 0, 2, 'h', 'i', 0, 1, 'x', 2, 0, 7, 1, 0xff, 1, 'y', 1, 1, 'k', 5, 0, 1, 'z')
	b = append(b, 0xff, 0xff, 0xff, 0xff, 0, 1, 0, 0, 0, 0, 0)
	return b
}

// checkDecoded holds a successful decode to its contract: Rows lines of valid JSON arrays with
// one element per column.
func checkDecoded(t *testing.T, d Decoded) {
	t.Helper()
	if len(d.Names) != len(d.Types) {
		t.Fatalf("%d names, %d types", len(d.Names), len(d.Types))
	}
	lines := bytes.Split(d.JSON, []byte("\n"))
	if len(lines) != d.Rows+1 || len(lines[d.Rows]) != 0 {
		t.Fatalf("%d rows in %q", d.Rows, d.JSON)
	}
	for _, l := range lines[:d.Rows] {
		var row []json.RawMessage
		if err := json.Unmarshal(l, &row); err != nil || len(row) != len(d.Names) {
			t.Fatalf("row %s: %v (%d columns)", l, err, len(d.Names))
		}
	}
}

// checkErr holds a failed decode to the error contract.
func checkErr(t *testing.T, err error) {
	t.Helper()
	var re *RowError
	switch {
	case errors.Is(err, ErrMalformed) || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrInvalidValue):
		if !errors.As(err, &re) {
			t.Fatalf("bad data without a RowError: %v", err)
		}
	case errors.Is(err, ErrUnsupportedType), errors.Is(err, ErrHeaderMismatch):
	default:
		t.Fatalf("error wraps no sentinel: %v", err)
	}
}

func FuzzDecodeNative(f *testing.F) {
	for _, rev := range []uint64{0, Revision} {
		body, _ := goBlock(f, goRows[:1], rev)
		f.Add(body, rev)
	}
	f.Add([]byte{1, 1, 1, 'x', 22, 'L', 'o', 'w', 'C', 'a', 'r', 'd', 'i', 'n', 'a', 'l', 'i', 't', 'y', '(', 'S', 't', 'r', 'i', 'n', 'g', ')'}, uint64(0))
	f.Fuzz(func(t *testing.T, src []byte, rev uint64) {
		d, err := DecodeNative(src, rev, nil)
		if err != nil {
			checkErr(t, err)
			return
		}
		checkDecoded(t, d)
	})
}

func FuzzDecodeRowBinary(f *testing.F) {
	f.Add(rbBody(), false)
	f.Add(append(rowBinaryHeader(rbNames, rbTypes), rbBody()...), true)
	f.Fuzz(func(t *testing.T, src []byte, withHeader bool) {
		d, err := DecodeRowBinary(src, rbNames, rbTypes, withHeader, nil)
		if err != nil {
			checkErr(t, err)
			return
		}
		checkDecoded(t, d)
	})
}

// TestTruncatedAtEveryByte: a body cut at any byte is either whole rows (cut at a row or block
// boundary: exactly the rows before it) or a RowError wrapping ErrMalformed; never a panic, a
// wrong row or a silent partial row.
func TestTruncatedAtEveryByte(t *testing.T) {
	check := func(t *testing.T, full []byte, decode func([]byte) (Decoded, error)) {
		whole, err := decode(full)
		if err != nil {
			t.Fatal(err)
		}
		ok := 0
		for i := 0; i < len(full); i++ {
			d, err := decode(full[:i])
			if err != nil {
				var re *RowError
				if !errors.Is(err, ErrMalformed) || !errors.As(err, &re) {
					t.Fatalf("cut at %d: %v", i, err)
				}
				continue
			}
			ok++
			if !bytes.HasPrefix(whole.JSON, d.JSON) || d.Rows >= whole.Rows {
				t.Fatalf("cut at %d decoded %d rows %q, not a prefix of the whole", i, d.Rows, d.JSON)
			}
		}
		t.Logf("%d of %d cuts fall on a boundary", ok, len(full))
	}
	for _, rev := range []uint64{0, Revision} {
		one, _ := goBlock(t, goRows, rev)
		two, _ := goBlock(t, goRows[:1], rev)
		body := append(append([]byte(nil), one...), two...)
		t.Run("Native", func(t *testing.T) {
			check(t, body, func(b []byte) (Decoded, error) { return DecodeNative(b, rev, nil) })
		})
	}
	t.Run("RowBinary", func(t *testing.T) {
		check(t, rbBody(), func(b []byte) (Decoded, error) { return DecodeRowBinary(b, rbNames, rbTypes, false, nil) })
	})
	t.Run("RowBinaryWithNamesAndTypes", func(t *testing.T) {
		body := append(rowBinaryHeader(rbNames, rbTypes), rbBody()...)
		check(t, body, func(b []byte) (Decoded, error) {
			d, err := DecodeRowBinary(b, rbNames, rbTypes, true, nil)
			if err == nil && len(d.Names) == 0 && len(b) > 0 {
				return d, errors.New("no header")
			}
			return d, err
		})
	})
}

// TestRowErrorsNameRowAndColumn: bad data in a later row names that row and its column.
func TestRowErrorsNameRowAndColumn(t *testing.T) {
	body := rbBody()
	bad := append(append([]byte(nil), body...), body...)
	bad[len(body)+7] = 2 // the second copy's first row: Nullable flag 2 in column n
	_, err := DecodeRowBinary(bad, rbNames, rbTypes, false, nil)
	var re *RowError
	if !errors.As(err, &re) || re.Row != 2 || re.Column != "n" || !errors.Is(err, ErrMalformed) {
		t.Fatalf("RowBinary: %v", err)
	}
	if !strings.Contains(err.Error(), `row index 2, column "n"`) {
		t.Fatalf("message %q", err)
	}
}
