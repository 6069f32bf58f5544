package chtype

import (
	"math/big"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

func TestToDriver(t *testing.T) {
	cases := []struct {
		typ, in string
		want    any
	}{
		{"String", `"a\"b"`, "a\"b"},
		{"UInt8", `7`, uint8(7)},
		{"Int16", `-7`, int16(-7)},
		{"UInt32", `7`, uint32(7)},
		{"UInt64", `18446744073709551615`, uint64(18446744073709551615)},
		{"Int64", `-9223372036854775808`, int64(-9223372036854775808)},
		{"Int128", `-5`, big.NewInt(-5)},
		{"Float32", `0.5`, float32(0.5)},
		{"Float64", `0.1`, 0.1},
		{"Bool", `true`, true},
		{"Decimal(10, 2)", `1.50`, decimal.RequireFromString("1.5")},
		{"DateTime", `"2024-01-02 03:04:05"`, time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"Date", `"2024-01-02"`, time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)},
		{"UUID", `"6f9619ff-8b86-d011-b42d-00cf4fc964ff"`, uuid.MustParse("6f9619ff-8b86-d011-b42d-00cf4fc964ff")},
		{"IPv4", `"1.2.3.4"`, netip.MustParseAddr("1.2.3.4")},
		{"Enum8('a' = 1)", `"a"`, "a"},
		{"Nullable(String)", `null`, nil},
		{"LowCardinality(Nullable(String))", `"x"`, "x"},
		{"Array(Nullable(UInt8))", `[1,null]`, []any{uint8(1), nil}},
		{"Tuple(String, UInt8)", `["x",2]`, []any{"x", uint8(2)}},
		{"Map(String, UInt64)", `{"a":1}`, map[string]uint64{"a": 1}},
		{"Map(String, Nullable(String))", `{"a":null}`, map[string]*string{"a": nil}},
	}
	for _, c := range cases {
		ty, err := Parse(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ty.ToDriver([]byte(c.in))
		if err != nil {
			t.Errorf("%s ToDriver(%s): %v", c.typ, c.in, err)
			continue
		}
		switch w := c.want.(type) {
		case decimal.Decimal:
			if d, ok := got.(decimal.Decimal); !ok || !d.Equal(w) {
				t.Errorf("%s ToDriver(%s) = %#v, want %v", c.typ, c.in, got, w)
			}
		case *big.Int:
			if b, ok := got.(*big.Int); !ok || b.Cmp(w) != 0 {
				t.Errorf("%s ToDriver(%s) = %#v, want %v", c.typ, c.in, got, w)
			}
		case time.Time:
			if tm, ok := got.(time.Time); !ok || !tm.Equal(w) {
				t.Errorf("%s ToDriver(%s) = %#v, want %v", c.typ, c.in, got, w)
			}
		default:
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s ToDriver(%s) = %#v, want %#v", c.typ, c.in, got, c.want)
			}
		}
	}
}

func TestDriverRoundTrip(t *testing.T) {
	cases := []struct{ typ, canonical string }{
		{"String", `"x\u0000y"`},
		{"FixedString(4)", `"ab"`},
		{"UInt64", `18446744073709551615`},
		{"Int256", `-57896044618658097711785492504343953926634992332820282019728792003956564819968`},
		{"Float32", `0.1`},
		{"Float64", `1e+300`},
		{"Decimal(18, 4)", `-1.2500`},
		{"Date32", `"1950-01-01"`},
		{"DateTime('Asia/Tokyo')", `"2024-01-02 12:00:00"`},
		{"DateTime64(6)", `"2024-01-02 12:00:00.123456"`},
		{"UUID", `"6f9619ff-8b86-d011-b42d-00cf4fc964ff"`},
		{"IPv6", `"::ffff:1.2.3.4"`},
		{"Enum16('a' = 1000)", `"a"`},
		{"Nullable(Int8)", `null`},
		{"Array(Array(String))", `[["a"],[]]`},
		{"Tuple(a String, b Nullable(UInt8))", `["x",null]`},
		{"Map(String, UInt8)", `{"a":1,"b":2}`},
		{"JSON", `{"a":{"b":[1,"x"]}}`},
		{"Bool", `false`},
	}
	for _, c := range cases {
		ty, err := Parse(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		v, err := ty.ToDriver([]byte(c.canonical))
		if err != nil {
			t.Errorf("%s ToDriver(%s): %v", c.typ, c.canonical, err)
			continue
		}
		back, err := ty.AppendDriver(nil, v)
		if err != nil || string(back) != c.canonical {
			t.Errorf("%s: AppendDriver(ToDriver(%s)) = (%s, %v)", c.typ, c.canonical, back, err)
		}
	}
}

func TestAppendDriverScanTypes(t *testing.T) {
	s := "x"
	ty, _ := Parse("Nullable(String)")
	got, err := ty.AppendDriver(nil, &s)
	if err != nil || string(got) != `"x"` {
		t.Fatalf("got (%s, %v)", got, err)
	}
	var nilp *string
	got, _ = ty.AppendDriver(nil, nilp)
	eq(t, string(got), "null")
	nt, _ := Parse("Tuple(a String, b UInt8)")
	got, err = nt.AppendDriver(nil, map[string]any{"a": "q", "b": uint8(3)})
	if err != nil || string(got) != `["q",3]` {
		t.Fatalf("named tuple from map: (%s, %v)", got, err)
	}
	ut, _ := Parse("UInt8")
	if _, err := ut.AppendDriver(nil, "not a number"); err == nil {
		t.Fatal("want an error for a string scanned as UInt8")
	}
}
