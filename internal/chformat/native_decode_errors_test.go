package chformat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

type testCol struct {
	name, typ string
	data      []byte
}

// nativeBlock writes a revision-0 Native block of rows rows.
func nativeBlock(rows int, cols ...testCol) []byte {
	b := binary.AppendUvarint(nil, uint64(len(cols)))
	b = binary.AppendUvarint(b, uint64(rows))
	for _, c := range cols {
		b = binary.AppendUvarint(b, uint64(len(c.name)))
		b = append(b, c.name...)
		b = binary.AppendUvarint(b, uint64(len(c.typ)))
		b = append(b, c.typ...)
		b = append(b, c.data...)
	}
	return b
}

func u64s(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// lcColumn is a LowCardinality(String) column: version prefix, one chunk with keys and UInt8
// indexes.
func lcColumn(keys []string, idx ...byte) []byte {
	b := u64s(1, 0x600, uint64(len(keys)))
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
	}
	b = append(b, u64s(uint64(len(idx)))...)
	return append(b, idx...)
}

func wantRowError(t *testing.T, err error, sentinel error, row int, column string) {
	t.Helper()
	var re *RowError
	if !errors.As(err, &re) || !errors.Is(err, sentinel) || re.Row != row || re.Column != column {
		t.Fatalf("want a RowError (%v) at row %d column %q, got %v", sentinel, row, column, err)
	}
}

// TestNativeBadDataNamesRowAndColumn: bad values deep inside composites are pinned to the row
// holding them, counting the rows of earlier blocks.
func TestNativeBadDataNamesRowAndColumn(t *testing.T) {
	first := nativeBlock(2, testCol{"id", "UInt8", []byte{1, 2}}, testCol{"a", "Array(Enum8('x' = 1))", append(u64s(0, 1), 1)})
	cases := []struct {
		name string
		body []byte
		err  error
		row  int
		col  string
	}{
		{"enum value in an array", nativeBlock(3, testCol{"id", "UInt8", []byte{1, 2, 3}},
			testCol{"a", "Array(Enum8('x' = 1))", append(u64s(3, 3, 4), 1, 1, 1, 9)}), ErrInvalidValue, 2 + 2, "a"},
		{"null flag", nativeBlock(2, testCol{"id", "UInt8", []byte{1, 2}},
			testCol{"a", "Array(Enum8('x' = 1))", append(u64s(0, 1), 1)}, testCol{"n", "Nullable(UInt8)", []byte{0, 2, 0, 0}}), ErrMalformed, 2 + 1, "n"},
		{"columns differ from the first block", nativeBlock(1, testCol{"id", "UInt16", []byte{1, 0}},
			testCol{"a", "Array(Enum8('x' = 1))", u64s(0)}), ErrMalformed, 2, "id"},
		{"LowCardinality index outside its keys", nativeBlock(2, testCol{"id", "UInt8", []byte{1, 2}},
			testCol{"a", "Array(Enum8('x' = 1))", u64s(0, 0)}, testCol{"lc", "LowCardinality(String)", lcColumn([]string{"", "k"}, 1, 2)}), ErrMalformed, 2 + 1, "lc"},
		{"decreasing offsets", nativeBlock(2, testCol{"id", "UInt8", []byte{1, 2}},
			testCol{"a", "Array(Enum8('x' = 1))", append(u64s(1, 0), 1)}), ErrMalformed, 2 + 1, "a"},
		{"duplicate column", nativeBlock(1, testCol{"id", "UInt8", []byte{1}}, testCol{"id", "UInt8", []byte{1}}), ErrMalformed, 2, "id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeNative(append(append([]byte(nil), first...), c.body...), 0, nil)
			wantRowError(t, err, c.err, c.row, c.col)
			if !strings.Contains(err.Error(), `column "`+c.col+`"`) {
				t.Fatalf("message %q does not name the column", err)
			}
			if c.err == ErrInvalidValue && (!strings.Contains(err.Error(), "9 is not a value of Enum8('x' = 1)") || errors.Is(err, ErrMalformed)) {
				t.Fatalf("message %q does not name the value and its enum, or also says malformed", err)
			}
		})
	}
}

// TestRowBinaryEnumValueNotNamed: an enum value the type does not name is ErrInvalidValue at
// its row and column, naming the value, in RowBinary as in Native.
func TestRowBinaryEnumValueNotNamed(t *testing.T) {
	_, err := DecodeRowBinary([]byte{1, 1, 2, 7}, []string{"id", "e"}, []string{"UInt8", "Enum8('a' = 1)"}, false, nil)
	wantRowError(t, err, ErrInvalidValue, 1, "e")
	if !strings.Contains(err.Error(), "7 is not a value of Enum8('a' = 1)") || errors.Is(err, ErrMalformed) {
		t.Fatalf("message %q does not name the value and its enum, or also says malformed", err)
	}
}

// TestNativeUnsupported: types, serializations and dictionaries the decoder cannot read are
// ErrUnsupportedType naming the column and the type, never misread.
func TestNativeUnsupported(t *testing.T) {
	for _, typ := range []string{"AggregateFunction(sum, UInt64)", "JSON", "Variant(String, UInt8)", "Array(Nested(a UInt8))", "Point"} {
		_, err := DecodeNative(nativeBlock(1, testCol{"col", typ, []byte{0}}), 0, nil)
		if !errors.Is(err, ErrUnsupportedType) || !strings.Contains(err.Error(), `"col"`) || !strings.Contains(err.Error(), typ) {
			t.Fatalf("%s: %v", typ, err)
		}
	}
	// A sparse column at a revision with custom serialization flags.
	b := binary.AppendUvarint(nil, 0) // BlockInfo: end
	b = append(b, nativeBlock(1, testCol{"sp", "UInt8", []byte{1, 0}})...)
	if _, err := DecodeNative(b, Revision, nil); !errors.Is(err, ErrUnsupportedType) || !strings.Contains(err.Error(), `"sp"`) {
		t.Fatalf("sparse: %v", err)
	}
	// A LowCardinality chunk that needs a global dictionary.
	lc := append(u64s(1, 0x100), u64s(1)...)
	if _, err := DecodeNative(nativeBlock(1, testCol{"lc", "LowCardinality(String)", lc}), 0, nil); !errors.Is(err, ErrUnsupportedType) {
		t.Fatalf("global dictionary: %v", err)
	}
	// RowBinary.
	for _, typ := range []string{"JSON", "AggregateFunction(sum, UInt64)", "Array(Nothing)"} {
		_, err := DecodeRowBinary([]byte{0}, []string{"col"}, []string{typ}, false, nil)
		if !errors.Is(err, ErrUnsupportedType) || !strings.Contains(err.Error(), `"col"`) {
			t.Fatalf("RowBinary %s: %v", typ, err)
		}
	}
}

// TestLowCardinalityExpansionIsBounded: one long key repeated by one-byte indexes cannot expand
// a small body into unbounded memory.
func TestLowCardinalityExpansionIsBounded(t *testing.T) {
	key := strings.Repeat("k", 64<<10)
	idx := bytes.Repeat([]byte{1}, 2000) // 128 MiB of rows from 66 KiB
	_, err := DecodeNative(nativeBlock(len(idx), testCol{"lc", "LowCardinality(String)", lcColumn([]string{"", key}, idx...)}), 0, nil)
	var re *RowError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &re) || re.Column != "lc" {
		t.Fatalf("%v", err)
	}
	// The same column repeating it a few times is fine.
	d, err := DecodeNative(nativeBlock(3, testCol{"lc", "LowCardinality(String)", lcColumn([]string{"", key}, 1, 0, 1)}), 0, nil)
	if err != nil || d.Rows != 3 {
		t.Fatalf("%d rows, %v", d.Rows, err)
	}
}

// TestDecodeNativeFor: a body for known columns must name them with their types, up to the
// DateTime zones ClickHouse drops; values are then read in the table's zone.
func TestDecodeNativeFor(t *testing.T) {
	body := nativeBlock(1, testCol{"t", "DateTime", u64s(0)[:4]}, testCol{"a", "Array(DateTime64(3))", append(u64s(1), u64s(1500)...)})
	names, types := []string{"a", "t"}, []string{"Array(DateTime64(3, 'Asia/Tokyo'))", "DateTime('Asia/Tokyo')"}
	d, err := DecodeNativeFor(body, 0, names, types, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(d.JSON); got != "[\"1970-01-01 09:00:00\",[\"1970-01-01 09:00:01.500\"]]\n" {
		t.Fatalf("rows %s", got)
	}
	if strings.Join(d.Types, ";") != "DateTime('Asia/Tokyo');Array(DateTime64(3, 'Asia/Tokyo'))" {
		t.Fatalf("types %v", d.Types)
	}
	plain, err := DecodeNative(body, 0, nil)
	if err != nil || string(plain.JSON) != "[\"1970-01-01 00:00:00\",[\"1970-01-01 00:00:01.500\"]]\n" {
		t.Fatalf("DecodeNative %s %v", plain.JSON, err)
	}
	for _, c := range []struct{ names, types []string }{
		{[]string{"a"}, []string{"Array(DateTime64(3))"}},                                          // t is unknown
		{[]string{"a", "t"}, []string{"Array(DateTime64(6))", "DateTime"}},                         // a's precision differs
		{[]string{"a", "t"}, []string{"Array(DateTime64(3))", "LowCardinality(DateTime)"}},         // layout differs in Native
		{[]string{"a", "t"}, []string{"Array(Nullable(DateTime64(3, 'UTC')))", "DateTime('UTC')"}}, // a is not nullable
	} {
		if _, err := DecodeNativeFor(body, 0, c.names, c.types, nil); !errors.Is(err, ErrHeaderMismatch) {
			t.Fatalf("%v: %v", c.types, err)
		}
	}
}

// TestConformIgnoresOnlyWhatBytesDoNotCarry: the type comparison of headers.
func TestConformIgnoresOnlyWhatBytesDoNotCarry(t *testing.T) {
	for _, c := range []struct {
		body, want string
		rowBinary  bool
		ok         bool
	}{
		{"Decimal(9,2)", "Decimal(9, 2)", false, true},
		{"DateTime", "DateTime('Asia/Tokyo')", false, true},
		{"Map(String,DateTime)", "Map(String, DateTime('UTC'))", false, true},
		{"DateTime64(3)", "DateTime64(3, 'UTC')", false, true},
		{"DateTime64(3)", "DateTime64(6, 'UTC')", false, false},
		{"DateTime", "DateTime64(0)", false, false},
		{"String", "LowCardinality(String)", false, false},
		{"String", "LowCardinality(String)", true, true},
		{"Map(String,Array(UInt8))", "Map(LowCardinality(String), Array(LowCardinality(UInt8)))", true, true},
		{"Nullable(String)", "LowCardinality(Nullable(String))", true, true},
		{"Enum8('DateTime(\\'x\\')' = 1)", "Enum8('DateTime' = 1)", false, false},
		{"Enum8('LowCardinality(' = 1)", "Enum8('' = 1)", true, false},
		{"Enum8('a b' = 1)", "Enum8('ab' = 1)", false, false},
		{"UInt8", "Int8", true, false},
	} {
		e := newExpected([]string{"c"}, []string{c.want})
		_, err := e.conform("c", c.body, !c.rowBinary)
		if (err == nil) != c.ok {
			t.Errorf("%s as %s (RowBinary %v): %v", c.body, c.want, c.rowBinary, err)
		}
	}
}

// TestZeroRowBlocksCarryNoData: a header-only block (columns, no rows) has no column data, not
// even a LowCardinality prefix; the next block follows at once.
func TestZeroRowBlocksCarryNoData(t *testing.T) {
	body := nativeBlock(0, testCol{"lc", "LowCardinality(String)", nil})
	body = append(body, nativeBlock(1, testCol{"lc", "LowCardinality(String)", lcColumn([]string{"", "k"}, 1)})...)
	d, err := DecodeNative(body, 0, nil)
	if err != nil || d.Rows != 1 || string(d.JSON) != "[\"k\"]\n" || len(d.Names) != 1 {
		t.Fatalf("%+v %v", d, err)
	}
}
