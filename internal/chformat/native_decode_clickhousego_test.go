package chformat

import (
	"bytes"
	"strings"
	"testing"
	"time"

	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// goColumns are the types clickhouse-go's Native encoder writes that the decoder reads, modern
// ones included.
var goColumns = []struct{ name, typ string }{
	{"i8", "Int8"}, {"i16", "Int16"}, {"i32", "Int32"}, {"i64", "Int64"}, {"i128", "Int128"}, {"i256", "Int256"},
	{"u8", "UInt8"}, {"u16", "UInt16"}, {"u32", "UInt32"}, {"u64", "UInt64"}, {"u128", "UInt128"}, {"u256", "UInt256"},
	{"f32", "Float32"}, {"f64", "Float64"}, {"b", "Bool"},
	{"s", "String"}, {"fs", "FixedString(4)"},
	{"d", "Date"}, {"d32", "Date32"}, {"dt", "DateTime"}, {"dtz", "DateTime('Asia/Tokyo')"},
	{"dt64", "DateTime64(3)"}, {"dt64z", "DateTime64(6, 'America/New_York')"},
	{"u", "UUID"}, {"ip4", "IPv4"}, {"ip6", "IPv6"},
	{"d9", "Decimal(9, 2)"}, {"d18", "Decimal(18, 4)"}, {"d38", "Decimal(38, 10)"}, {"d76", "Decimal(76, 20)"},
	{"e8", "Enum8('a' = -128, 'b' = 0, 'ü' = 127)"}, {"e16", "Enum16('x' = -32768, 'y' = 32767)"},
	{"ns", "Nullable(String)"}, {"ni", "Nullable(Int64)"},
	{"ai", "Array(Int32)"}, {"ans", "Array(Nullable(String))"}, {"aas", "Array(Array(String))"},
	{"m", "Map(String, UInt64)"}, {"mis", "Map(Int32, String)"},
	{"t", "Tuple(Int32, String)"}, {"tn", "Tuple(a Int32, b Nullable(String))"},
	{"lc", "LowCardinality(String)"}, {"lcn", "LowCardinality(Nullable(String))"},
	{"alc", "Array(LowCardinality(String))"}, {"mlc", "Map(LowCardinality(String), String)"},
}

// goRows are JSON values for goColumns: extremes, NULLs, empty composites and unicode. Maps
// have one key at most: the driver takes Go maps, whose order is random (the server test
// checks the order of several keys).
var goRows = [][]string{
	{`-128`, `-32768`, `-2147483648`, `-9223372036854775808`, `-170141183460469231731687303715884105728`,
		`-57896044618658097711785492504343953926634992332820282019728792003956564819968`,
		`0`, `0`, `0`, `0`, `0`, `0`,
		`-3.4028235e38`, `-1.7976931348623157e308`, `false`,
		`""`, `"abcd"`,
		`"1970-01-01"`, `"1900-01-01"`, `"1970-01-01 00:00:00"`, `"1970-01-01 09:00:00"`,
		`"1970-01-01 00:00:00.000"`, `"1969-12-31 19:00:00.000001"`,
		`"00000000-0000-0000-0000-000000000000"`, `"0.0.0.0"`, `"::"`,
		`-9999999.99`, `-99999999999999.9999`, `-9999999999999999999999999999.9999999999`,
		`-99999999999999999999999999999999999999999999999999999999.99999999999999999999`,
		`"a"`, `"x"`,
		`null`, `null`, `[]`, `[]`, `[]`, `{}`, `{}`, `[0,""]`, `[0,null]`, `""`, `null`, `[]`, `{}`},
	{`127`, `32767`, `2147483647`, `9223372036854775807`, `170141183460469231731687303715884105727`,
		`57896044618658097711785492504343953926634992332820282019728792003956564819967`,
		`255`, `65535`, `4294967295`, `18446744073709551615`, `340282366920938463463374607431768211455`,
		`115792089237316195423570985008687907853269984665640564039457584007913129639935`,
		`1.4e-45`, `5e-324`, `true`,
		`"unicode: 日本語 🎉 \"quote\" \\ back\ttab\nnl \u0000 nul"`, `"ab"`,
		`"2149-06-06"`, `"2299-12-31"`, `"2106-02-07 06:28:15"`, `"2106-02-07 15:28:15"`,
		`"2262-04-11 23:47:16.854"`, `"2200-01-01 00:00:00.123456"`,
		`"01234567-89ab-cdef-0123-456789abcdef"`, `"255.255.255.255"`, `"2001:db8::ff00:42:8329"`,
		`9999999.99`, `99999999999999.9999`, `9999999999999999999999999999.9999999999`,
		`99999999999999999999999999999999999999999999999999999999.99999999999999999999`,
		`"ü"`, `"y"`,
		`"not null"`, `9223372036854775807`, `[1,-2,2147483647]`, `["a",null,"日本"]`, `[[],["x","y"],[""]]`,
		`{"ü":18446744073709551615}`, `{"-1":"a"}`, `[-1,"t"]`, `[7,"é"]`,
		`"lc1"`, `"lcn"`, `["p","q","p"]`, `{"b":"2"}`},
	{`0`, `1`, `-1`, `42`, `0`, `-1`, `1`, `2`, `3`, `4`, `5`, `6`,
		`-0`, `0.1`, `true`, `"plain"`, `"xyzw"`,
		`"2024-02-29"`, `"2024-02-29"`, `"2024-02-29 12:34:56"`, `"2024-02-29 12:34:56"`,
		`"2024-02-29 12:34:56.789"`, `"2024-02-29 12:34:56.000001"`,
		`"ffffffff-ffff-ffff-ffff-ffffffffffff"`, `"10.0.0.1"`, `"::ffff:10.0.0.1"`,
		`0.01`, `-0.0001`, `1.5`, `0`, `"b"`, `"x"`,
		`""`, `0`, `[0]`, `[null]`, `[["é"]]`, `{"":0}`, `{"0":"x"}`, `[0,""]`, `[1,""]`,
		`"lc1"`, `"lc1"`, `[]`, `{"a":""}`},
}

// goBlock encodes rows with clickhouse-go's own Native block encoder at revision, and returns
// the encoding and the rows' canonical JSON.
func goBlock(t testing.TB, rows [][]string, revision uint64) ([]byte, []byte) {
	t.Helper()
	b := proto.NewBlock()
	b.ServerContext.Timezone = time.UTC
	types := make([]*chtype.Type, len(goColumns))
	for i, c := range goColumns {
		if err := b.AddColumn(c.name, column.Type(c.typ)); err != nil {
			t.Fatalf("clickhouse-go column %s %s: %v", c.name, c.typ, err)
		}
		tp, err := chtype.Parse(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		types[i] = tp
	}
	var want []byte
	for r, row := range rows {
		vals := make([]any, len(row))
		want = append(want, '[')
		for i, raw := range row {
			canon, err := types[i].Canonical([]byte(raw))
			if err != nil {
				t.Fatalf("row %d %s: %v", r, goColumns[i].name, err)
			}
			if vals[i], err = types[i].ToDriver(canon); err != nil {
				t.Fatalf("row %d %s: ToDriver: %v", r, goColumns[i].name, err)
			}
			if i > 0 {
				want = append(want, ',')
			}
			want = append(want, canon...)
		}
		want = append(want, ']', '\n')
		if err := b.Append(vals...); err != nil {
			t.Fatalf("row %d: clickhouse-go Append: %v", r, err)
		}
	}
	var buf chproto.Buffer
	if err := b.Encode(&buf, revision); err != nil {
		t.Fatal(err)
	}
	return buf.Buf, want
}

// TestDecodeClickHouseGoBlocks: what clickhouse-go/v2 writes as a Native INSERT body over HTTP
// (revision 0), and the same blocks at Revision (BlockInfo and serialization flags), decode to
// the canonical form of the values it was given, block after block.
func TestDecodeClickHouseGoBlocks(t *testing.T) {
	for _, rev := range []uint64{0, Revision} {
		one, want := goBlock(t, goRows, rev)
		two, want2 := goBlock(t, goRows[1:], rev)
		body := append(append([]byte(nil), one...), two...)
		d, err := DecodeNative(body, rev, nil)
		if err != nil {
			t.Fatalf("revision %d: %v", rev, err)
		}
		diffLines(t, "clickhouse-go block", d.JSON, append(want, want2...))
		if d.Rows != len(goRows)*2-1 {
			t.Fatalf("revision %d: %d rows", rev, d.Rows)
		}
		var types []string
		for _, c := range goColumns {
			types = append(types, c.typ)
		}
		if strings.Join(d.Types, ";") != strings.Join(types, ";") {
			t.Fatalf("types %v", d.Types)
		}
		// The other revision's reading of the body is refused, never misread.
		other := Revision
		if rev != 0 {
			other = 0
		}
		if d, err := DecodeNative(body, other, nil); err == nil && bytes.Equal(d.JSON, append(want, want2...)) {
			t.Fatalf("revision %d body read at revision %d", rev, other)
		}
	}
}
