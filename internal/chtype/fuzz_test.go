package chtype

import (
	"bytes"
	"encoding/json"
	"testing"
)

var fuzzSeeds = []struct{ typ, val string }{
	{"String", `"héllo"`},
	{"FixedString(2)", `"ab"`},
	{"UInt64", `18446744073709551615`},
	{"Int8", `"-5"`},
	{"Int256", `-1`},
	{"Float32", `1e-40`},
	{"Float64", `-0.0`},
	{"Decimal(38, 10)", `12345.6789`},
	{"Bool", `1`},
	{"Date", `"2024-02-29"`},
	{"Date32", `"1900-01-01T00:00:00+01:00"`},
	{"DateTime", `1700000000`},
	{"DateTime('Europe/Paris')", `"2024-10-27 02:30:00"`},
	{"DateTime64(3, 'UTC')", `"2024-01-01T00:00:00.123456789Z"`},
	{"UUID", `"6f9619ff8b86d011b42d00cf4fc964ff"`},
	{"IPv4", `"127.0.0.1"`},
	{"IPv6", `"fe80::1"`},
	{"Enum8('a' = 1, 'b' = 2)", `2`},
	{"Nullable(String)", `null`},
	{"LowCardinality(Nullable(String))", `"x"`},
	{"Array(Nullable(UInt8))", `[1,null,3]`},
	{"Array(Array(String))", `[["a"],[]]`},
	{"Tuple(a String, b Array(UInt8))", `{"a":"x","b":[1]}`},
	{"Map(String, Array(UInt64))", `{"k":[1,2]}`},
	{"Map(UInt16, String)", `{"1":"x"}`},
	{"JSON", `{"a":[1,{"b":null}]}`},
	{"AggregateFunction(sum, UInt64)", `1`},
}

// FuzzValidate checks that validation never panics and that a canonical value is valid JSON,
// canonical again (idempotent) and convertible for the native driver.
func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s.typ, []byte(s.val))
	}
	f.Fuzz(func(t *testing.T, typ string, val []byte) {
		ty, err := Parse(typ)
		if err != nil {
			return
		}
		c, err := ty.Canonical(val)
		checkRowBinary(t, ty, string(val), c, err)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("non-*Error %T: %v", err, err)
			}
			return
		}
		if !json.Valid(c) {
			t.Fatalf("%s: canonical %q of %q is not valid JSON", typ, c, val)
		}
		c2, err := ty.Canonical(c)
		if err != nil {
			t.Fatalf("%s: canonical %q of %q does not validate: %v", typ, c, val, err)
		}
		if !bytes.Equal(c, c2) && !hasTZ(ty) {
			t.Fatalf("%s: not idempotent: %q -> %q -> %q", typ, val, c, c2)
		}
		if ty.Supported() {
			v, err := ty.ToDriver(c)
			if err != nil && !isMapWithoutGoType(ty) {
				t.Fatalf("%s: ToDriver(%q): %v", typ, c, err)
			}
			if err == nil {
				if _, err := ty.AppendDriver(nil, v); err != nil {
					t.Fatalf("%s: AppendDriver(ToDriver(%q)): %v", typ, c, err)
				}
			}
		}
	})
}

// FuzzToDriver checks that the native conversion never panics on any input.
func FuzzToDriver(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s.typ, []byte(s.val))
	}
	f.Fuzz(func(t *testing.T, typ string, val []byte) {
		ty, err := Parse(typ)
		if err != nil {
			return
		}
		v, err := ty.ToDriver(val)
		if err != nil {
			return
		}
		_, _ = ty.AppendDriver(nil, v)
	})
}

// hasTZ reports whether t contains a DateTime in a zone with daylight saving time, where wall
// times in the repeated hour are ambiguous (as they are in ClickHouse).
func hasTZ(t *Type) bool {
	switch t.Kind {
	case DateTime, DateTime64:
		return t.TZ != "" && t.TZ != "UTC"
	case Nullable, LowCardinality, Array:
		return hasTZ(t.Elem)
	case Map:
		return hasTZ(t.Key) || hasTZ(t.Value)
	case Tuple:
		for _, f := range t.Fields {
			if hasTZ(f.Type) {
				return true
			}
		}
	}
	return false
}

func isMapWithoutGoType(t *Type) bool {
	switch t.Kind {
	case Map:
		return true
	case Nullable, LowCardinality, Array:
		return isMapWithoutGoType(t.Elem)
	case Tuple:
		for _, f := range t.Fields {
			if isMapWithoutGoType(f.Type) {
				return true
			}
		}
	}
	return false
}
