package chformat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/testutil/chdbtest"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// modernColumns are the types only modern servers have, with the composites around them.
var modernColumns = []string{
	"id UInt32",
	"i128 Int128", "i256 Int256", "u128 UInt128", "u256 UInt256",
	"b Bool", "d32 Date32", "dt64 DateTime64(3)", "dt64z DateTime64(6, 'Asia/Tokyo')", "dtz DateTime('America/New_York')",
	"ip4 IPv4", "ip6 IPv6", "d76 Decimal(76, 20)",
	"m Map(String, UInt64)", "mn Map(LowCardinality(String), Array(Nullable(Int32)))",
	"tn Tuple(a LowCardinality(String), b Nullable(IPv4))",
	"alcn Array(LowCardinality(Nullable(String)))",
	"lcf LowCardinality(FixedString(2))", "n Nullable(Decimal(18, 3))",
}

var modernRows = []string{
	`(1, -170141183460469231731687303715884105728, -57896044618658097711785492504343953926634992332820282019728792003956564819968,
	  0, 0, false, '1900-01-01', '1970-01-01 00:00:00.000', '1970-01-01 09:00:00.000001', '1970-01-01 00:00:00',
	  '0.0.0.0', '::', -99999999999999999999999999999999999999999999999999999999.99999999999999999999,
	  {}, {}, ('', NULL), [], '', NULL)`,
	`(2, 170141183460469231731687303715884105727, 57896044618658097711785492504343953926634992332820282019728792003956564819967,
	  340282366920938463463374607431768211455, 115792089237316195423570985008687907853269984665640564039457584007913129639935,
	  true, '2299-12-31', '2262-04-11 23:47:16.854', '2200-01-01 00:00:00.123456', '2106-02-07 01:28:15',
	  '255.255.255.255', '2001:db8::ff00:42:8329', 99999999999999999999999999999999999999999999999999999999.99999999999999999999,
	  {'z': 1, 'a': 18446744073709551615, 'ü日': 0}, {'k': [1, NULL, -2], 'j': []}, ('lc 🎉', '10.0.0.1'),
	  ['a', NULL, 'a', ''], 'xy', -123456789012345.678)`,
	`(3, 1, -1, 1, 2, true, '2024-02-29', '2024-02-29 12:34:56.789', '2024-02-29 12:34:56.000001', '2024-02-29 12:34:56',
	  '10.1.2.3', '::ffff:10.0.0.1', 0.5, {'': 0}, {'k': [NULL]}, ('lc 🎉', NULL), [NULL], 'x', 0)`,
}

// TestDecodeMatchesModernEngine: a modern ClickHouse engine's (chDB's) own Native,
// RowBinaryWithNamesAndTypes and RowBinary output of the types 18.16 lacks decodes to the
// canonical form of its JSONCompact output.
func TestDecodeMatchesModernEngine(t *testing.T) {
	var e chdbtest.Engine
	s := e.Store(t)
	t.Cleanup(e.Close)
	db := testsvc.UniqueName(t, "chformat")
	target := store.Target{Database: "default"}
	exec := func(sql string) {
		t.Helper()
		if err := s.Exec(t.Context(), target, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec("CREATE DATABASE " + db)
	table := db + ".types"
	exec("CREATE TABLE " + table + " (" + strings.Join(modernColumns, ", ") + ") ENGINE = Memory")
	for _, row := range modernRows {
		exec("INSERT INTO " + table + " VALUES " + row)
	}
	dir := t.TempDir()
	out := func(format, settings string) []byte {
		t.Helper()
		path := filepath.Join(dir, format+settings)
		exec("SELECT * FROM " + table + " ORDER BY id INTO OUTFILE '" + path + "' FORMAT " + format + settings)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	c, want := canonicalRows(t, out("JSONCompact", ""))
	if len(c.Data) != len(modernRows) {
		t.Fatalf("engine holds %d rows", len(c.Data))
	}
	names, types := c.names()
	check := func(t *testing.T, d Decoded, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		diffLines(t, "decoded", d.JSON, want)
		if d.Rows != len(modernRows) || strings.Join(d.Names, ",") != strings.Join(names, ",") || strings.Join(d.Types, ";") != strings.Join(types, ";") {
			t.Fatalf("%d rows, names %v types %v; want %v %v", d.Rows, d.Names, d.Types, names, types)
		}
	}
	// Native written at revision 0 names DateTime('America/New_York') "DateTime": read for the
	// table's columns (DecodeNativeFor), values are canonical in the table's zone.
	t.Run("Native", func(t *testing.T) {
		d, err := DecodeNativeFor(out("Native", ""), 0, reversed(names), reversed(types), nil)
		check(t, d, err)
	})
	t.Run("Native/max_block_size=1", func(t *testing.T) {
		d, err := DecodeNativeFor(out("Native", " SETTINGS max_block_size = 1"), 0, names, types, nil)
		check(t, d, err)
	})
	t.Run("RowBinaryWithNamesAndTypes", func(t *testing.T) {
		d, err := DecodeRowBinary(out("RowBinaryWithNamesAndTypes", ""), reversed(names), reversed(types), true, nil)
		check(t, d, err)
	})
	t.Run("RowBinary", func(t *testing.T) {
		d, err := DecodeRowBinary(out("RowBinary", ""), names, types, false, nil)
		check(t, d, err)
	})
}
