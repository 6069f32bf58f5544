package clickhousestore

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// TestBuildersAgreeWithToDriver checks that every fast path yields what chtype.ToDriver yields,
// and refuses what it refuses.
func TestBuildersAgreeWithToDriver(t *testing.T) {
	cases := []struct{ typ, val string }{
		{"String", `"plain"`}, {"String", `"esc\"aped\n"`}, {"String", `"ünï"`},
		{"LowCardinality(String)", `"lc"`},
		{"UInt8", `255`}, {"UInt8", `"7"`}, {"UInt16", `65535`}, {"UInt32", `1`}, {"UInt64", `18446744073709551615`},
		{"Int8", `-128`}, {"Int16", `-1`}, {"Int32", `2147483647`}, {"Int64", `-9223372036854775808`},
		{"Float64", `1e+300`}, {"Float64", `"0.5"`},
		{"DateTime", `"2024-01-02 03:04:05"`}, {"DateTime", `"2024-01-31 03:04:05"`}, {"DateTime", `1700000000`},
		{"DateTime('Asia/Tokyo')", `"2024-01-02 03:04:05"`},
		{"Nullable(String)", `null`}, {"Nullable(String)", `"x"`}, {"Nullable(UInt64)", `5`}, {"Nullable(DateTime)", `null`},
		{"Array(String)", `[]`}, {"Array(String)", `["a","b"]`}, {"Array(Float64)", `[1.5]`},
		{"UUID", `"6f9619ff-8b86-d011-b42d-00cf4fc964ff"`},
	}
	for _, c := range cases {
		ty, err := chtype.Parse(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ty.ToDriver([]byte(c.val))
		if err != nil {
			t.Fatalf("%s ToDriver(%s): %v", c.typ, c.val, err)
		}
		b := newBuilder(ty, 1)
		if err := b.add([]byte(c.val)); err != nil {
			t.Errorf("%s add(%s): %v", c.typ, c.val, err)
			continue
		}
		got := reflect.ValueOf(b.values()).Index(0).Interface()
		if !sameValue(got, want) {
			t.Errorf("%s %s: builder %#v, ToDriver %#v", c.typ, c.val, got, want)
		}
	}
	for _, c := range []struct{ typ, val string }{
		{"UInt8", `256`}, {"UInt64", `-1`}, {"Int8", `1.5`}, {"String", `1`}, {"DateTime", `"2024-02-30 00:00:00"`},
		{"DateTime", `"2200-01-01 00:00:00"`}, {"Nullable(UInt64)", `"x"`}, {"Array(String)", `[1]`}, {"Array(String)", `"a"`},
	} {
		ty, _ := chtype.Parse(c.typ)
		var ve *chtype.Error
		if err := newBuilder(ty, 1).add([]byte(c.val)); !errors.As(err, &ve) {
			t.Errorf("%s add(%s) = %v, want a *chtype.Error", c.typ, c.val, err)
		}
	}
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
		if bs.Len() != ra.Len() {
			return false
		}
		for i := 0; i < ra.Len(); i++ {
			if !reflect.DeepEqual(ra.Index(i).Interface(), bs.Index(i).Interface()) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}
