package chformat

import (
	"errors"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// encodeCases are columns with canonical rows, every structural case of Native: Nullable null
// maps with default values behind NULLs, Array offsets, Map offsets and key/value columns,
// Tuple element columns, LowCardinality dictionaries (Nullable ones with their NULL entry),
// and nesting of those.
var encodeCases = []struct {
	typ  string
	rows []string
}{
	{"UInt64", []string{"0", "18446744073709551615", "42"}},
	{"String", []string{`"a\tb"`, `""`, `"ünï"`}},
	{"FixedString(3)", []string{`"ab"`, `"xyz"`, `""`}},
	{"Nullable(String)", []string{"null", `"x"`, "null"}},
	{"Nullable(Decimal(10, 3))", []string{"-12.345", "null", "0.000"}},
	{"Nullable(UUID)", []string{"null", `"123e4567-e89b-12d3-a456-426614174000"`, "null"}},
	{"Array(Nullable(Int64))", []string{"[1,null,-3]", "[]", "[null]"}},
	{"Array(Array(UInt8))", []string{"[[1,2],[]]", "[[]]", "[]"}},
	{"Map(String, Int64)", []string{`{"k":1,"k\"2":-2}`, "{}", `{"a":0}`}},
	{"Map(UInt16, Array(String))", []string{`{"1":["x"],"2":[]}`, "{}", `{"7":["y","z"]}`}},
	{"Tuple(Int32, String)", []string{`[7,"tu\tple"]`, `[0,""]`, `[-1,"x"]`}},
	{"Tuple(x Int32, y Nullable(String))", []string{"[1,null]", `[0,"s"]`, `[2,"z"]`}},
	{"Array(Tuple(Int8, String))", []string{`[[1,"a"],[-2,"b'"]]`, "[]", `[[0,""]]`}},
	{"LowCardinality(String)", []string{`"lc1"`, `""`, `"lc1"`}},
	{"LowCardinality(Nullable(String))", []string{"null", `"v"`, `"v"`}},
	{"Array(LowCardinality(String))", []string{`["a","b","a"]`, "[]", `["b"]`}},
	{"Map(LowCardinality(String), Nullable(Float64))", []string{`{"a":1.5,"b":null}`, "{}", `{"a":-0}`}},
	{"Enum8('a' = 1, 'b' = 2)", []string{`"b"`, `"a"`, `"b"`}},
	{"DateTime64(3)", []string{`"2024-01-01 00:00:00.500"`, `"1970-01-01 00:00:00.000"`, `"2100-01-01 00:00:00.123"`}},
	{"Int128", []string{"-170141183460469231731687303715884105728", "0", "5"}},
}

// TestNativeEncodeDecodes: what NativeEncoder writes, the package's decoder reads back as the
// same canonical rows, at revision 0 and at Revision, in one block or several.
func TestNativeEncodeDecodes(t *testing.T) {
	for _, c := range encodeCases {
		typ, err := chtype.Parse(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		for _, rev := range []uint64{0, Revision} {
			e, err := NewNativeEncoder([]string{"c"}, []*chtype.Type{typ}, rev)
			if err != nil {
				t.Fatalf("%s: %v", c.typ, err)
			}
			var out []byte
			for i, r := range c.rows {
				if err := e.AppendRow([]byte("[" + r + "]")); err != nil {
					t.Fatalf("%s row %d: %v", c.typ, i, err)
				}
				if i == 0 {
					out = e.AppendBlock(out) // a block of one row, then one of two
				}
			}
			out = e.AppendBlock(out)
			d, err := DecodeNative(out, rev, nil)
			if err != nil {
				t.Fatalf("%s at %d: %v", c.typ, rev, err)
			}
			want := "[" + strings.Join(c.rows, "]\n[") + "]\n"
			if string(d.JSON) != want || d.Types[0] != c.typ {
				t.Errorf("%s at %d decodes to\n%s (%v), want\n%s", c.typ, rev, d.JSON, d.Types, want)
			}
		}
	}
}

// TestNativeEncodeRefusesBadRows: a row that is not a canonical row of the columns is an error
// and leaves nothing of itself behind.
func TestNativeEncodeRefusesBadRows(t *testing.T) {
	u8, _ := chtype.Parse("UInt8")
	arr, _ := chtype.Parse("Array(Nullable(String))")
	lc, _ := chtype.Parse("LowCardinality(String)")
	e, err := NewNativeEncoder([]string{"a", "b", "c"}, []*chtype.Type{u8, arr, lc}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.AppendRow([]byte(`[1,["x",null],"k"]`)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`[300,[],"k"]`, `[1,["x",1],"k"]`, `[1,["x"],null]`, `[1,["x"]]`, `[1,["x"],"k",4]`, `{}`} {
		if err := e.AppendRow([]byte(bad)); !errors.Is(err, ErrNativeEncode) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if e.Rows() != 1 {
		t.Fatalf("rows %d", e.Rows())
	}
	d, err := DecodeNative(e.AppendBlock(nil), 0, nil)
	if err != nil || string(d.JSON) != "[1,[\"x\",null],\"k\"]\n" {
		t.Fatalf("after refused rows: %s %v", d.JSON, err)
	}
	if _, err := NewNativeEncoder([]string{"a"}, []*chtype.Type{{Kind: chtype.Unsupported, Name: "AggregateFunction(sum, UInt8)"}}, 0); !errors.Is(err, ErrNativeEncode) {
		t.Errorf("unsupported type: %v", err)
	}
}
