package chtype

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in    string
		kind  Kind
		check func(t *testing.T, ty *Type)
	}{
		{"String", String, nil},
		{"FixedString(16)", FixedString, func(t *testing.T, ty *Type) { eq(t, ty.Len, 16) }},
		{"UInt64", UInt64, nil},
		{"Int256", Int256, nil},
		{"Decimal(18, 4)", Decimal, func(t *testing.T, ty *Type) { eq(t, ty.Precision, 18); eq(t, ty.Scale, 4) }},
		{"Decimal64(3)", Decimal, func(t *testing.T, ty *Type) { eq(t, ty.Precision, 18); eq(t, ty.Scale, 3) }},
		{"DateTime", DateTime, func(t *testing.T, ty *Type) { eq(t, ty.TZ, "") }},
		{"DateTime('Europe/Paris')", DateTime, func(t *testing.T, ty *Type) { eq(t, ty.TZ, "Europe/Paris") }},
		{"DateTime64(6, 'UTC')", DateTime64, func(t *testing.T, ty *Type) { eq(t, ty.Precision, 6); eq(t, ty.TZ, "UTC") }},
		{"DateTime64(3)", DateTime64, func(t *testing.T, ty *Type) { eq(t, ty.Precision, 3) }},
		{"Enum8('a' = 1, 'b\\'c' = -2)", Enum8, func(t *testing.T, ty *Type) {
			eq(t, len(ty.Enum), 2)
			eq(t, ty.Enum[1].Name, "b'c")
			eq(t, ty.Enum[1].Value, int16(-2))
		}},
		{"Enum16('x' = 1000)", Enum16, nil},
		{"Nullable(String)", Nullable, func(t *testing.T, ty *Type) { eq(t, ty.IsNullable(), true); eq(t, ty.Elem.Kind, String) }},
		{"LowCardinality(Nullable(String))", LowCardinality, func(t *testing.T, ty *Type) { eq(t, ty.IsNullable(), true) }},
		{"Array(Array(UInt8))", Array, func(t *testing.T, ty *Type) { eq(t, ty.Elem.Elem.Kind, UInt8) }},
		{"Tuple(String, UInt8)", Tuple, func(t *testing.T, ty *Type) { eq(t, len(ty.Fields), 2); eq(t, ty.Fields[0].Name, "") }},
		{"Tuple(a String, `b c` Nullable(UInt8))", Tuple, func(t *testing.T, ty *Type) {
			eq(t, ty.Fields[1].Name, "b c")
			eq(t, ty.Fields[1].Type.Kind, Nullable)
		}},
		{"Map(String, Array(UInt64))", Map, func(t *testing.T, ty *Type) { eq(t, ty.Value.Kind, Array) }},
		{"JSON", JSON, nil},
		{"JSON(max_dynamic_paths=10)", JSON, nil},
		{"Object('json')", JSON, nil},
		{"Bool", Bool, nil},
		{"IPv6", IPv6, nil},
		{"SimpleAggregateFunction(sum, UInt64)", UInt64, nil},
		{"AggregateFunction(uniq, String)", Unsupported, nil},
		{"Nested(a String, b UInt8)", Unsupported, nil},
		{"Nothing", Unsupported, nil},
		{"Array(Variant(String, UInt8))", Array, func(t *testing.T, ty *Type) { eq(t, ty.Supported(), false) }},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			ty, err := Parse(c.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", c.in, err)
			}
			eq(t, ty.Kind, c.kind)
			eq(t, ty.String(), c.in)
			if c.check != nil {
				c.check(t, ty)
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	for _, in := range []string{"", "Nullable(", "Array()", "FixedString(x)", "FixedString(0)", "Decimal(80, 2)",
		"DateTime('Nowhere/Atlantis')", "Enum8('a' = 300)", "String)", "Map(String)", "DateTime64(12)",
		"Tuple(a String, UInt8)", "Enum8('a"} {
		if _, err := Parse(in); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %v, want ErrSyntax", in, err)
		}
	}
}

func eq[T comparable](t *testing.T, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("got %v, want %v", got, want)
	}
}
