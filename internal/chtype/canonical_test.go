package chtype

import (
	"errors"
	"testing"
)

type canonCase struct {
	typ, in, want string
	code          Code
}

func runCanon(t *testing.T, cases []canonCase) {
	t.Helper()
	for _, c := range cases {
		ty, err := Parse(c.typ)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.typ, err)
		}
		got, err := ty.Canonical([]byte(c.in))
		checkRowBinary(t, ty, c.in, got, err)
		if c.code != "" {
			var ve *Error
			if !errors.As(err, &ve) || ve.Code != c.code {
				t.Errorf("%s <- %s: got (%s, %v), want error %s", c.typ, c.in, got, err, c.code)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%s <- %s: got (%s, %v), want %s", c.typ, c.in, got, err, c.want)
		}
	}
}

func TestCanonicalScalars(t *testing.T) {
	runCanon(t, []canonCase{
		{typ: "String", in: `"héllo\n\"x\""`, want: `"héllo\n\"x\""`},
		{typ: "String", in: `"\u00e9<>&"`, want: `"é<>&"`},
		{typ: "String", in: `12`, code: CodeTypeMismatch},
		{typ: "String", in: `null`, code: CodeNullNotAllowed},
		{typ: "Nullable(String)", in: ` null `, want: `null`},
		{typ: "FixedString(3)", in: `"abc"`, want: `"abc"`},
		{typ: "FixedString(3)", in: `"abcd"`, code: CodeTooLong},
		{typ: "UInt8", in: `255`, want: `255`},
		{typ: "UInt8", in: `300`, code: CodeOutOfRange},
		{typ: "UInt8", in: `-1`, code: CodeOutOfRange},
		{typ: "UInt8", in: `1.5`, code: CodeInvalidValue},
		{typ: "UInt8", in: `true`, code: CodeTypeMismatch},
		{typ: "Int8", in: `-128`, want: `-128`},
		{typ: "Int8", in: `"-0012"`, want: `-12`},
		{typ: "UInt64", in: `18446744073709551615`, want: `18446744073709551615`},
		{typ: "UInt64", in: `18446744073709551616`, code: CodeOutOfRange},
		{typ: "Int64", in: `"-9223372036854775808"`, want: `-9223372036854775808`},
		{typ: "Int64", in: `9007199254740993`, want: `9007199254740993`},
		{typ: "UInt128", in: `340282366920938463463374607431768211455`, want: `340282366920938463463374607431768211455`},
		{typ: "Int128", in: `170141183460469231731687303715884105728`, code: CodeOutOfRange},
		{typ: "Float64", in: `1.50`, want: `1.5`},
		{typ: "Float64", in: `"2e3"`, want: `2000`},
		{typ: "Float64", in: `1e999`, code: CodeOutOfRange},
		{typ: "Float64", in: `01`, code: CodeInvalidValue},
		{typ: "Float32", in: `0.1`, want: `0.1`},
		{typ: "Float32", in: `1e39`, code: CodeOutOfRange},
		{typ: "Bool", in: `true`, want: `true`},
		{typ: "Bool", in: `0`, want: `false`},
		{typ: "Bool", in: `"yes"`, code: CodeTypeMismatch},
		{typ: "Decimal(10, 2)", in: `1.5`, want: `1.50`},
		{typ: "Decimal(10, 2)", in: `"-12345678.99"`, want: `-12345678.99`},
		{typ: "Decimal(10, 2)", in: `123456789.5`, code: CodeOutOfRange},
		{typ: "Decimal(10, 2)", in: `1.234`, code: CodeInvalidValue},
		{typ: "Decimal(10, 2)", in: `1.230`, want: `1.23`},
		{typ: "UUID", in: `"6F9619FF-8B86-D011-B42D-00CF4FC964FF"`, want: `"6f9619ff-8b86-d011-b42d-00cf4fc964ff"`},
		{typ: "UUID", in: `"not-a-uuid"`, code: CodeInvalidValue},
		{typ: "IPv4", in: `"10.0.0.1"`, want: `"10.0.0.1"`},
		{typ: "IPv4", in: `"::1"`, code: CodeInvalidValue},
		{typ: "IPv6", in: `"10.0.0.1"`, want: `"::ffff:10.0.0.1"`},
		{typ: "IPv6", in: `"2001:DB8::1"`, want: `"2001:db8::1"`},
		{typ: "Enum8('a' = 1, 'b' = 2)", in: `"b"`, want: `"b"`},
		{typ: "Enum8('a' = 1, 'b' = 2)", in: `1`, want: `"a"`},
		{typ: "Enum8('a' = 1, 'b' = 2)", in: `"c"`, code: CodeInvalidValue},
		{typ: "Enum8('a' = 1, 'b' = 2)", in: `3`, code: CodeInvalidValue},
		{typ: "LowCardinality(String)", in: `"x"`, want: `"x"`},
		{typ: "JSON", in: `{"a": [1, 2], "b": {"c": null}}`, want: `{"a":[1,2],"b":{"c":null}}`},
		{typ: "JSON", in: `[1]`, code: CodeTypeMismatch},
		{typ: "AggregateFunction(uniq, String)", in: `"x"`, code: CodeUnsupportedType},
		{typ: "String", in: `nul`, code: CodeInvalidValue},
		{typ: "String", in: ``, code: CodeInvalidValue},
		{typ: "String", in: `"unterminated`, code: CodeTypeMismatch},
	})
}

func TestCanonicalTimes(t *testing.T) {
	runCanon(t, []canonCase{
		{typ: "Date", in: `"2024-02-29"`, want: `"2024-02-29"`},
		{typ: "Date", in: `"2023-02-29"`, code: CodeInvalidValue},
		{typ: "Date", in: `"2024-01-01T23:30:00Z"`, want: `"2024-01-01"`},
		{typ: "Date", in: `"1969-12-31"`, code: CodeOutOfRange},
		{typ: "Date", in: `19000`, code: CodeTypeMismatch},
		{typ: "Date32", in: `"1950-06-01"`, want: `"1950-06-01"`},
		{typ: "DateTime", in: `"2024-01-02 03:04:05"`, want: `"2024-01-02 03:04:05"`},
		{typ: "DateTime", in: `"2024-01-02T03:04:05Z"`, want: `"2024-01-02 03:04:05"`},
		{typ: "DateTime", in: `"2024-01-02T03:04:05.999+02:00"`, want: `"2024-01-02 01:04:05"`},
		{typ: "DateTime", in: `1700000000`, want: `"2023-11-14 22:13:20"`},
		{typ: "DateTime", in: `"1700000000"`, want: `"2023-11-14 22:13:20"`},
		{typ: "DateTime", in: `"2024-01-02"`, want: `"2024-01-02 00:00:00"`},
		{typ: "DateTime", in: `"2106-02-07 06:28:16"`, code: CodeOutOfRange},
		{typ: "DateTime", in: `-1`, code: CodeOutOfRange},
		{typ: "DateTime", in: `"yesterday"`, code: CodeInvalidValue},
		{typ: "DateTime", in: `"2024-01-02 25:00:00"`, code: CodeInvalidValue},
		{typ: "DateTime", in: `true`, code: CodeTypeMismatch},
		{typ: "DateTime('Europe/Paris')", in: `"2024-07-01T00:00:00Z"`, want: `"2024-07-01 02:00:00"`},
		{typ: "DateTime('Europe/Paris')", in: `"2024-07-01 02:00:00"`, want: `"2024-07-01 02:00:00"`},
		{typ: "DateTime64(3)", in: `"2024-01-02T03:04:05.123456Z"`, want: `"2024-01-02 03:04:05.123"`},
		{typ: "DateTime64(6)", in: `1700000000.5`, want: `"2023-11-14 22:13:20.500000"`},
		{typ: "DateTime64(0)", in: `"2024-01-02 03:04:05"`, want: `"2024-01-02 03:04:05"`},
		{typ: "DateTime64(3)", in: `"1899-12-31 23:59:59"`, code: CodeOutOfRange},
		{typ: "DateTime64(9, 'Asia/Tokyo')", in: `"2024-01-02T03:04:05.000000001Z"`, want: `"2024-01-02 12:04:05.000000001"`},
	})
}

func TestCanonicalComposites(t *testing.T) {
	runCanon(t, []canonCase{
		{typ: "Array(String)", in: `[]`, want: `[]`},
		{typ: "Array(String)", in: `[ "a" , "b" ]`, want: `["a","b"]`},
		{typ: "Array(String)", in: `[["a"]]`, code: CodeTypeMismatch},
		{typ: "Array(UInt8)", in: `[1, 256]`, code: CodeOutOfRange},
		{typ: "Array(UInt8)", in: `[1,]`, code: CodeInvalidValue},
		{typ: "Array(UInt8)", in: `[1 2]`, code: CodeInvalidValue},
		{typ: "Array(Nullable(Int32))", in: `[null, -1]`, want: `[null,-1]`},
		{typ: "Array(Array(UInt8))", in: `[[1],[]]`, want: `[[1],[]]`},
		{typ: "Tuple(String, UInt8)", in: `["x", 1]`, want: `["x",1]`},
		{typ: "Tuple(String, UInt8)", in: `["x"]`, code: CodeInvalidValue},
		{typ: "Tuple(String, UInt8)", in: `["x", 1, 2]`, code: CodeInvalidValue},
		{typ: "Tuple(a String, b UInt8)", in: `{"b": 2, "a": "y"}`, want: `["y",2]`},
		{typ: "Tuple(a String, b UInt8)", in: `{"a": "y"}`, code: CodeInvalidValue},
		{typ: "Map(String, UInt64)", in: `{"k": 1, "é": "2"}`, want: `{"k":1,"é":2}`},
		{typ: "Map(UInt8, String)", in: `{"01": "a"}`, want: `{"1":"a"}`},
		{typ: "Map(UInt8, String)", in: `{"x": "a"}`, code: CodeInvalidValue},
		{typ: "Map(String, UInt8)", in: `{"k": 300}`, code: CodeOutOfRange},
		{typ: "Map(String, String)", in: `[]`, code: CodeTypeMismatch},
	})
}

func TestErrorPath(t *testing.T) {
	ty, _ := Parse("Array(Tuple(a String, b Array(UInt8)))")
	_, err := ty.Canonical([]byte(`[{"a":"x","b":[1]},{"a":"y","b":[2,999]}]`))
	var ve *Error
	if !errors.As(err, &ve) {
		t.Fatalf("want *Error, got %v", err)
	}
	eq(t, ve.Code, CodeOutOfRange)
	eq(t, ve.Path, "[1].b[1]")
}

func TestAppendCanonicalKeepsDstOnError(t *testing.T) {
	ty, _ := Parse("Array(UInt8)")
	dst := []byte("prefix")
	out, err := ty.AppendCanonical(dst, []byte(`[1,2,300]`))
	if err == nil || string(out) != "prefix" {
		t.Fatalf("got (%q, %v), want prefix and an error", out, err)
	}
}
