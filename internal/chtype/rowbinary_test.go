package chtype

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// checkRowBinary asserts that AppendRowBinary decides exactly as AppendCanonical did for in
// (canon, cerr) — the same error code, or success — and that the RowBinary value reads back as
// the same canonical JSON, consuming every byte written. Every canonical test case and the
// validation fuzzer run it, so the two encoders cannot drift apart.
func checkRowBinary(t *testing.T, ty *Type, in string, canon []byte, cerr error) {
	t.Helper()
	if !ty.RowBinarySupported() {
		return
	}
	prefix := []byte("pre")
	bin, err := ty.AppendRowBinary(prefix, []byte(in))
	if cerr != nil {
		var ce, be *Error
		if !errors.As(cerr, &ce) || !errors.As(err, &be) || ce.Code != be.Code || ce.Path != be.Path {
			t.Errorf("%s <- %s: canonical refused with %v, RowBinary gave (%x, %v)", ty.Name, in, cerr, bin, err)
		}
		if len(bin) != len(prefix) {
			t.Errorf("%s <- %s: a refused value left %d bytes", ty.Name, in, len(bin)-len(prefix))
		}
		return
	}
	if err != nil {
		t.Errorf("%s <- %s: canonical %s, RowBinary refused: %v", ty.Name, in, canon, err)
		return
	}
	if !bytes.Equal(bin[:len(prefix)], prefix) {
		t.Fatalf("%s: prefix overwritten", ty.Name)
	}
	bin = append(bin[len(prefix):], "tail"...)
	got, n, err := ty.AppendCanonicalRowBinary([]byte("x"), bin)
	if err != nil || string(got[1:]) != string(canon) || n != len(bin)-4 {
		t.Errorf("%s <- %s: RowBinary %x reads back as (%s, %d of %d bytes, %v), canonical is %s", ty.Name, in, bin, got, n, len(bin)-4, err, canon)
	}
	for cut := 0; cut < len(bin)-4; cut++ {
		if _, _, err := ty.AppendCanonicalRowBinary(nil, bin[:cut]); err == nil {
			if n2, _ := ty.SkipRowBinary(bin[:cut]); n2 == cut {
				continue // a shorter value can be a valid value of its own only if fully consumed
			}
			t.Errorf("%s <- %s: truncated RowBinary %x (%d of %d bytes) read without error", ty.Name, in, bin[:cut], cut, len(bin)-4)
		}
	}
}

// TestRowBinaryKnownBytes pins encodings against what ClickHouse 18.16 and chDB read (checked by
// the store tests that insert them): a change here breaks every queued backlog.
func TestRowBinaryKnownBytes(t *testing.T) {
	cases := []struct{ typ, in, hex string }{
		{"UInt64", `10`, "0a00000000000000"},
		{"Int16", `-2`, "feff"},
		{"String", `"ann"`, "03616e6e"},
		{"FixedString(4)", `"ab"`, "61620000"},
		{"Nullable(Int32)", `null`, "01"},
		{"Nullable(Int32)", `-5`, "00fbffffff"},
		{"DateTime", `1700000000`, "00f15365"},
		{"Date", `"1970-01-02"`, "0100"},
		{"UUID", `"123e4567-e89b-12d3-a456-426614174000"`, "d3129be867453e1200401714664256a4"},
		{"Float64", `1.5`, "000000000000f83f"},
		{"Decimal(9,2)", `"1.5"`, "96000000"},
		{"Array(UInt8)", `[1,2]`, "020102"},
		{"Enum8('a' = 1, 'b' = -2)", `"b"`, "fe"},
		{"IPv4", `"1.2.3.4"`, "04030201"},
		{"DateTime64(3, 'UTC')", `"1970-01-01 00:00:01.5"`, "dc05000000000000"},
	}
	for _, c := range cases {
		ty, err := Parse(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ty.AppendRowBinary(nil, []byte(c.in))
		if err != nil || bytesHex(b) != c.hex {
			t.Errorf("%s <- %s: got (%s, %v), want %s", c.typ, c.in, bytesHex(b), err, c.hex)
		}
	}
}

func bytesHex(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func TestRowBinaryLongJSON(t *testing.T) {
	ty, err := Parse("JSON")
	if err != nil {
		t.Fatal(err)
	}
	in := `{"k":"` + string(bytes.Repeat([]byte("x"), 300)) + `"}`
	canon, cerr := ty.Canonical([]byte(in))
	checkRowBinary(t, ty, in, canon, cerr)
	str, err := Parse("String")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{`"` + string(bytes.Repeat([]byte(`é
`), 100)) + `"`, `"` + string(bytes.Repeat([]byte("y"), 200)) + `"`} {
		canon, cerr := str.Canonical([]byte(in))
		checkRowBinary(t, str, in, canon, cerr)
	}
}

func TestRowBinarySupported(t *testing.T) {
	for typ, want := range map[string]bool{
		"Array(Nullable(String))": true, "Map(String, Tuple(a UInt8, b Date))": true,
		"JSON": true, "Array(JSON)": true, "AggregateFunction(sum, UInt64)": false,
	} {
		ty, err := Parse(typ)
		if err != nil {
			t.Fatal(err)
		}
		if got := ty.RowBinarySupported(); got != want {
			t.Errorf("%s: RowBinarySupported() = %v, want %v", typ, got, want)
		}
	}
}

// TestRowBinaryEnumValueNotNamed: an enum value its type does not name is an *Error with
// CodeInvalidValue naming the value, the type and where in a composite value it is; truncated
// data stays ErrShortRowBinary.
func TestRowBinaryEnumValueNotNamed(t *testing.T) {
	const enum = "Enum8('a' = 1, 'b' = 2)"
	for _, c := range []struct {
		typ, hex, path string
	}{
		{enum, "07", ""},
		{"Nullable(" + enum + ")", "0007", ""},
		{"LowCardinality(" + enum + ")", "07", ""},
		{"Array(" + enum + ")", "03010207", "[2]"},
		{"Tuple(x UInt8, e " + enum + ")", "0507", ".e"},
		{"Map(String, " + enum + ")", "01016b07", "[0].value"},
		{"Enum16('a' = 1000)", "e903", ""},
	} {
		ty, err := Parse(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		bin, _ := hex.DecodeString(c.hex)
		out, _, err := ty.AppendCanonicalRowBinary([]byte("x"), bin)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidValue || e.Path != c.path || !strings.Contains(e.Message, "is not a value of Enum") || string(out) != "x" {
			t.Errorf("%s %s: %v (out %q), want invalid_value at %q", c.typ, c.hex, err, out, c.path)
			continue
		}
		if want := map[string]string{"e903": "1001"}[c.hex]; want != "" && !strings.HasPrefix(e.Message, want+" ") {
			t.Errorf("%s %s: %q, want the value %s named", c.typ, c.hex, e.Message, want)
		}
	}
	ty, _ := Parse("Array(" + enum + ")")
	if _, _, err := ty.AppendCanonicalRowBinary(nil, []byte{3, 1, 2}); !errors.Is(err, ErrShortRowBinary) {
		t.Errorf("truncated array: %v, want ErrShortRowBinary", err)
	}
}
