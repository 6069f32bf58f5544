package clickhousestore

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// agree checks that a builder accepts, refuses and yields exactly what chtype.ToDriver does for
// one value, and returns a description of the difference, or "".
func agree(ty *chtype.Type, val []byte) string {
	want, werr := ty.ToDriver(val)
	b := newBuilder(ty, 1, &arena{})
	gerr := addValue(b, val)
	if (werr == nil) != (gerr == nil) {
		return "builder error " + errString(gerr) + ", ToDriver error " + errString(werr)
	}
	if gerr != nil {
		var ve *chtype.Error
		if !errors.As(gerr, &ve) {
			return "builder error is not a *chtype.Error: " + gerr.Error()
		}
		return ""
	}
	got := reflect.ValueOf(b.values()).Index(0).Interface()
	if !sameValue(got, want) {
		return "builder " + reflect.ValueOf(got).String() + " differs from ToDriver"
	}
	return ""
}

// addValue feeds one whole value to b as a row would, refusing anything after it.
func addValue(b builder, val []byte) error {
	e := bytes.TrimLeft(bytes.TrimRight(val, " \t\r\n"), " \t\r\n")
	if len(e) == 0 {
		return &chtype.Error{Code: chtype.CodeInvalidValue, Message: "empty value"}
	}
	end, err := b.take(e, 0)
	if err != nil {
		return err
	}
	if end != len(e) {
		return &chtype.Error{Code: chtype.CodeInvalidValue, Message: "not one JSON value"}
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestBuildersAgreeWithToDriver checks that every fast path yields what chtype.ToDriver yields,
// and refuses what it refuses.
func TestBuildersAgreeWithToDriver(t *testing.T) {
	cases := []struct{ typ, val string }{
		{"String", `"plain"`}, {"String", `"esc\"aped\n"`}, {"String", `"ünï"`}, {"String", `"\u00e9\ud83d\ude00"`},
		{"String", `"\ud83d"`}, {"String", "\"\xff\""}, {"String", `""`}, {"String", `"a\x"`}, {"String", "\"a\nb\""},
		{"LowCardinality(String)", `"lc"`}, {"LowCardinality(String)", `"l\tc"`}, {"LowCardinality(Nullable(String))", `null`},
		{"UInt8", `255`}, {"UInt8", `"7"`}, {"UInt8", `256`}, {"UInt8", `01`}, {"UInt8", `0`}, {"UInt8", `-0`}, {"UInt8", `1e2`},
		{"UInt16", `65535`}, {"UInt32", `1`}, {"UInt32", `4294967296`},
		{"UInt64", `18446744073709551615`}, {"UInt64", `18446744073709551616`}, {"UInt64", `99999999999999999999`},
		{"UInt64", `9999999999999999999`}, {"UInt64", `-1`}, {"UInt64", `1.0`},
		{"Int8", `-128`}, {"Int8", `-129`}, {"Int8", `127`}, {"Int8", `128`}, {"Int8", `1.5`}, {"Int8", `-`}, {"Int8", `-0`},
		{"Int16", `-1`}, {"Int32", `2147483647`}, {"Int64", `-9223372036854775808`}, {"Int64", `9223372036854775808`},
		{"Int64", `-9223372036854775809`}, {"Int64", `"-5"`},
		{"Float64", `1e+300`}, {"Float64", `"0.5"`}, {"Float64", `-0.0`}, {"Float64", `1e400`}, {"Float64", `-Inf`},
		{"Float64", `0x1p-2`}, {"Float64", `01.5`}, {"Float64", `.5`}, {"Float64", `0.1`}, {"Float64", `123456789012345`}, {"Float64", `1234567890123456.5`}, {"Float64", `1.`},
		{"Float64", `-0`}, {"Float64", `1.5e3`}, {"Float64", `9007199254740993`}, {"Float64", `0.000000000000001`}, {"Float64", `194846116661.45821`}, {"Float32", `3.4e38`}, {"Float32", `3.5e38`}, {"Float32", `0.1`},
		{"Date", `"2024-02-29"`}, {"Date", `"2023-02-29"`}, {"Date", `"1970-01-01"`}, {"Date", `"1969-12-31"`},
		{"Date", `"2149-06-06"`}, {"Date", `"2149-06-07"`}, {"Date", `"2024-01-02 03:04:05"`},
		{"DateTime", `"2024-01-02 03:04:05"`}, {"DateTime", `"2024-01-31 03:04:05"`}, {"DateTime", `1700000000`},
		{"DateTime", `"2024-02-30 00:00:00"`}, {"DateTime", `"2200-01-01 00:00:00"`}, {"DateTime", `"2106-02-07 06:28:15"`},
		{"DateTime", `"2106-02-07 06:28:16"`}, {"DateTime", `"1970-01-01 00:00:00"`}, {"DateTime", `"2024-01-02 24:00:00"`},
		{"DateTime", `"2024-01-02T03:04:05Z"`}, {"DateTime", `"2024-1-02 03:04:05"`}, {"DateTime", `"2000-02-29 12:00:00"`},
		{"DateTime", `"1900-02-29 12:00:00"`},
		{"DateTime('Asia/Tokyo')", `"2024-01-02 03:04:05"`}, {"DateTime('Asia/Tokyo')", `"1970-01-01 00:00:00"`},
		{"DateTime('Europe/Paris')", `"2024-03-31 02:30:00"`}, {"DateTime('Europe/Paris')", `"2024-10-27 02:30:00"`},
		{"Nullable(String)", `null`}, {"Nullable(String)", `"x"`}, {"Nullable(UInt64)", `5`}, {"Nullable(DateTime)", `null`},
		{"Nullable(UInt64)", `"x"`}, {"Nullable(UInt64)", `nul`}, {"Nullable(Int8)", `-3`}, {"Nullable(Date)", `"2024-01-01"`},
		{"String", `null`}, {"UInt64", `null`},
		{"Array(String)", `[]`}, {"Array(String)", `["a","b"]`}, {"Array(Float64)", `[1.5]`}, {"Array(String)", `[ "a" , "\n" ]`},
		{"Array(String)", `[1]`}, {"Array(String)", `"a"`}, {"Array(String)", `["a",]`}, {"Array(String)", `null`},
		{"Array(UInt8)", `[1,2,256]`}, {"Array(DateTime)", `["2024-01-02 03:04:05"]`}, {"Array(Int32)", `[-1, 2]`},
		{"Array(Array(String))", `[["a"],[]]`}, {"Array(Nullable(String))", `["a",null]`},
		{"UUID", `"6f9619ff-8b86-d011-b42d-00cf4fc964ff"`}, {"Decimal(10,2)", `1.25`},
	}
	for _, c := range cases {
		ty, err := chtype.Parse(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		if d := agree(ty, []byte(c.val)); d != "" {
			t.Errorf("%s %s: %s", c.typ, c.val, d)
		}
	}
}

// FuzzBuilders holds every builder to chtype.ToDriver on arbitrary values.
func FuzzBuilders(f *testing.F) {
	for _, s := range []struct{ typ, val string }{
		{"String", `"a\"b"`}, {"Nullable(String)", `null`}, {"Array(String)", `["x",""]`}, {"UInt8", `255`},
		{"Int64", `-9223372036854775808`}, {"Float32", `1e-40`}, {"Date", `"2024-02-29"`},
		{"DateTime", `"2024-01-02 03:04:05"`}, {"DateTime('Europe/Paris')", `"2024-10-27 02:30:00"`},
		{"LowCardinality(String)", `"\u00e9"`}, {"Array(UInt64)", `[1, 18446744073709551615]`},
		{"Float64", `-12.250`}, {"Array(Float64)", `[0.1, 1e5]`}, {"Nullable(Float64)", `null`},
	} {
		f.Add(s.typ, []byte(s.val))
	}
	f.Fuzz(func(t *testing.T, typ string, val []byte) {
		ty, err := chtype.Parse(typ)
		if err != nil {
			return
		}
		if d := agree(ty, val); d != "" {
			t.Fatalf("%s %q: %s", typ, val, d)
		}
	})
}

func sameValue(a, b any) bool {
	ta, ok1 := a.(time.Time)
	tb, ok2 := b.(time.Time)
	if ok1 && ok2 {
		return ta.Equal(tb)
	}
	if pa, ok := a.(*time.Time); ok {
		if b == nil {
			return pa == nil
		}
		return pa != nil && pa.Equal(b.(time.Time))
	}
	ra := reflect.ValueOf(a)
	if ra.Kind() == reflect.Pointer {
		if b == nil {
			return ra.IsNil()
		}
		return !ra.IsNil() && reflect.DeepEqual(ra.Elem().Interface(), b)
	}
	if ra.Kind() == reflect.Slice && ra.Type().Elem().Kind() != reflect.Interface {
		bs := reflect.ValueOf(b)
		if bs.Kind() != reflect.Slice || bs.Len() != ra.Len() {
			return false
		}
		for i := 0; i < ra.Len(); i++ {
			if !sameValue(ra.Index(i).Interface(), bs.Index(i).Interface()) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}
