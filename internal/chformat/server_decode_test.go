package chformat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// serverColumns is a table of every type ClickHouse 18.16 has, each column a type the decoders
// support.
var serverColumns = []string{
	"id UInt32",
	"i8 Int8", "i16 Int16", "i32 Int32", "i64 Int64",
	"u8 UInt8", "u16 UInt16", "u32 UInt32", "u64 UInt64",
	"f32 Float32", "f64 Float64",
	"s String", "fs FixedString(3)",
	"d Date", "dt DateTime", "dtz DateTime('Asia/Tokyo')",
	"u UUID",
	"d9 Decimal(9, 2)", "d18 Decimal(18, 4)", "d38 Decimal(38, 10)",
	"e8 Enum8('a' = -128, 'b' = 0, 'ü' = 127)", "e16 Enum16('x' = -32768, 'y' = 32767)",
	"ns Nullable(String)", "ni Nullable(Int64)",
	"ai Array(Int32)", "ans Array(Nullable(String))", "aas Array(Array(String))",
	"t Tuple(Int32, String, Nullable(UInt8))",
	"lc LowCardinality(String)", "lcn LowCardinality(Nullable(String))", "alc Array(LowCardinality(String))",
}

// serverRows are minimum, maximum and ordinary values, NULLs, empty arrays and unicode.
var serverRows = []string{
	`(1, -128, -32768, -2147483648, -9223372036854775808, 0, 0, 0, 0,
	  -3.4028235e38, -1.7976931348623157e308, '', 'abc',
	  '1970-01-02', '1970-01-01 00:00:01', '1970-01-01 09:00:01', '00000000-0000-0000-0000-000000000000',
	  -9999999.99, -99999999999999.9999, -9999999999999999999999999999.9999999999, 'a', 'x',
	  NULL, NULL, [], [], [], (0, '', NULL), '', NULL, [])`,
	`(2, 127, 32767, 2147483647, 9223372036854775807, 255, 65535, 4294967295, 18446744073709551615,
	  1.4e-45, 5e-324, 'unicode: 日本語 🎉 "quote" \\ back\ttab\nnl \0 nul', 'xy',
	  '2105-12-31', '2106-02-07 06:28:15', '2106-02-07 15:28:15', '01234567-89ab-cdef-0123-456789abcdef',
	  9999999.99, 99999999999999.9999, 9999999999999999999999999999.9999999999, 'ü', 'y',
	  'not null', 9223372036854775807, [1, -2, 2147483647], ['a', NULL, '日本'], [[], ['x', 'y'], ['']],
	  (-1, 't', 255), 'lc1', 'lcn', ['p', 'q', 'p'])`,
	`(3, 0, 1, -1, 42, 1, 2, 3, 4, -0.0, 0.1, 'plain', 'xyz',
	  '2024-02-29', '2024-02-29 12:34:56', '2024-02-29 12:34:56', 'ffffffff-ffff-ffff-ffff-ffffffffffff',
	  0.01, -0.0001, 1.5, 'b', 'x',
	  '', 0, [0], [NULL], [['é']], (7, 'é', 0), 'lc1', 'lc1', [])`,
	`(4, 5, 5, 5, 5, 5, 5, 5, 5, 1.5, 2.5, 'x', 'a',
	  '2000-01-01', '2000-01-01 00:00:00', '2000-01-01 00:00:00', '11111111-2222-3333-4444-555555555555',
	  1, 2, 3, 'a', 'y',
	  NULL, -1, [], [NULL, NULL], [[]], (1, '', NULL), '', NULL, [''])`,
}

// serverTable creates the table of serverColumns holding serverRows and returns its qualified
// name.
func serverTable(t *testing.T) (*testsvc.ClickHouse, string) {
	ch := testsvc.ClickHouseServer(t)
	db := ch.CreateDatabase(t, "chformat")
	table := db + ".types"
	lc := url.Values{"allow_experimental_low_cardinality_type": {"1"}}
	chHTTP(t, ch, "CREATE TABLE "+table+" ("+strings.Join(serverColumns, ", ")+") ENGINE = Memory", lc)
	// One INSERT per row gives the Memory table one block per row.
	for _, row := range serverRows {
		chHTTP(t, ch, "INSERT INTO "+table+" VALUES "+row, nil)
	}
	return ch, table
}

// TestDecodeMatchesServer: the server's own Native and RowBinary output of a table covering
// every supported 18.16 type decodes to exactly the canonical form of its JSONCompact output
// of the same rows, in one block or several.
func TestDecodeMatchesServer(t *testing.T) {
	ch, table := serverTable(t)
	sel := "SELECT * FROM " + table + " ORDER BY id FORMAT "
	c, want := canonicalRows(t, chHTTP(t, ch, sel+"JSONCompact", nil))
	if len(c.Data) != len(serverRows) {
		t.Fatalf("server holds %d rows, want %d", len(c.Data), len(serverRows))
	}
	names, types := c.names()

	// The server names a DateTime('Asia/Tokyo') column's type "DateTime" in the Native it
	// writes at revision 0, so DecodeNative gives its values in UTC: the same instants, compared
	// with the server's own conversion to UTC.
	nativeTypes := append([]string(nil), types...)
	var utcSel []string
	for i, n := range names {
		if n == "dtz" {
			nativeTypes[i] = "DateTime"
			n = "toTimeZone(dtz, 'UTC') AS dtz"
		}
		utcSel = append(utcSel, n)
	}
	_, wantNative := canonicalRows(t, chHTTP(t, ch, "SELECT "+strings.Join(utcSel, ", ")+" FROM "+table+" ORDER BY id FORMAT JSONCompact", nil))
	for _, blockSize := range []string{"65536", "1", "3"} {
		t.Run("Native/max_block_size="+blockSize, func(t *testing.T) {
			native := chHTTP(t, ch, sel+"Native", url.Values{"max_block_size": {blockSize}})
			d, err := DecodeNative(native, 0, []byte("keep"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(d.JSON, []byte("keep")) {
				t.Fatal("DecodeNative did not append to dst")
			}
			diffLines(t, "Native", d.JSON[4:], wantNative)
			if d.Rows != len(serverRows) || strings.Join(d.Names, ",") != strings.Join(names, ",") || strings.Join(d.Types, ",") != strings.Join(nativeTypes, ",") {
				t.Fatalf("Decoded %d rows, names %v, types %v; want %d, %v, %v", d.Rows, d.Names, d.Types, len(serverRows), names, nativeTypes)
			}
			// Read for the table's columns (given in another order), the zone is the table's.
			d, err = DecodeNativeFor(native, 0, reversed(names), reversed(types), nil)
			if err != nil {
				t.Fatal(err)
			}
			diffLines(t, "Native for the table", d.JSON, want)
			if strings.Join(d.Types, ",") != strings.Join(types, ",") {
				t.Fatalf("types %v", d.Types)
			}
		})
	}

	rb := chHTTP(t, ch, sel+"RowBinary", nil)
	t.Run("RowBinary", func(t *testing.T) {
		d, err := DecodeRowBinary(rb, names, types, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		diffLines(t, "RowBinary", d.JSON, want)
		if d.Rows != len(serverRows) {
			t.Fatalf("%d rows", d.Rows)
		}
	})

	// 18.16 has no RowBinaryWithNamesAndTypes output; its header is put in front of the
	// server's RowBinary rows (the chDB test reads a modern server's own).
	t.Run("RowBinaryWithNamesAndTypes", func(t *testing.T) {
		body := rowBinaryHeader(names, types)
		body = append(body, rb...)
		// The expected columns come in another order and spelling; the header's order wins.
		en, et := reversed(names), reversed(types)
		for i := range et {
			et[i] = strings.ReplaceAll(et[i], ", ", ",")
		}
		d, err := DecodeRowBinary(body, en, et, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		diffLines(t, "RowBinaryWithNamesAndTypes", d.JSON, want)
		// The types are the expected ones (their spelling), in the header's order.
		if strings.Join(d.Names, ",") != strings.Join(names, ",") || strings.Join(d.Types, ";") != strings.Join(reversed(et), ";") {
			t.Fatalf("names %v types %v", d.Names, d.Types)
		}
		wrong := append([]string(nil), et...)
		wrong[len(wrong)-2] = "Int64" // the table's i8 is not the header's Int8
		_, err = DecodeRowBinary(body, en, wrong, true, nil)
		if !errors.Is(err, ErrHeaderMismatch) || !strings.Contains(err.Error(), `"i8"`) {
			t.Fatalf("type mismatch: %v", err)
		}
		_, err = DecodeRowBinary(body, en[1:], et[1:], true, nil)
		if !errors.Is(err, ErrHeaderMismatch) || !strings.Contains(err.Error(), `"`+en[0]+`"`) {
			t.Fatalf("unknown column: %v", err)
		}
	})
}

func rowBinaryHeader(names, types []string) []byte {
	b := binary.AppendUvarint(nil, uint64(len(names)))
	for _, list := range [][]string{names, types} {
		for _, s := range list {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
	}
	return b
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
