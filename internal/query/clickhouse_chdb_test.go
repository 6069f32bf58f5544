package query

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/cache/localcache"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// typesTableDDL is a table covering the types the ClickHouse output formats write, and
// typesRows are rows full of what needs escaping: tabs, newlines, quotes, backslashes, NULL,
// unicode, 64-bit extremes.
const (
	typesTableDDL = `CREATE TABLE %s.types (id UInt64, i8 Int8, i64 Int64, u64 UInt64, f Float64, f32 Float32,
		s String, fs FixedString(3), d Date, dt DateTime, n Nullable(String), ni Nullable(Int32),
		a Array(String), ai Array(Nullable(Int64)), u UUID, dec Decimal(10,3), e Enum8('a'=1,'b\'q'=2),
		t Tuple(Int32, String), lc LowCardinality(String), lcn LowCardinality(Nullable(String)),
		b Bool, m Map(String, Int64), ip IPv4, dt64 DateTime64(3), i128 Int128,
		tn Tuple(x Int32, y Nullable(String)), at Array(Tuple(Int8, String)), aa Array(Array(UInt8)),
		mi Map(UInt16, Array(String)), fl Float64) ENGINE = MergeTree ORDER BY id`
	typesRows = `INSERT INTO %s.types VALUES
		(1, -128, -9223372036854775808, 18446744073709551615, 1.5, 0.1, 'tab\there\nnl\\bs \'q" dq/sl\r\0z', 'ab',
		 '2024-02-29', '2024-02-29 23:59:59', NULL, NULL, ['x,y', '"q"', '', 'tab\t', 'NULL', '\\N'], [1, NULL, -3],
		 '123e4567-e89b-12d3-a456-426614174000', -12.345, 'b\'q', (7, 'tu\tple'), 'lc1', NULL, true,
		 {'k': 1, 'k"2': -2}, '1.2.3.4', '2024-01-01 00:00:00.5', -170141183460469231731687303715884105728,
		 (1, NULL), [(1, 'a'), (-2, 'b\'')], [[1, 2], []], {1: ['x'], 2: []}, 1e300),
		(2, 127, 9223372036854775807, 0, -0.0, 3.4e38, 'ünïcødé 😀 \x01 \x1B \x7F ` + "\u2028" + `', 'xyz',
		 '2000-01-01', '2000-01-01 00:00:00', '', -5, [], [], '00000000-0000-0000-0000-000000000000', 0, 'a',
		 (0, ''), '', 'v', false, {}, '0.0.0.0', '2000-01-01 00:00:00.000', 0, (0, 's'), [], [[]], {}, 0.00001),
		(3, 0, 0, 42, 1e-7, -1.25, '', '', '2149-06-06', '2100-01-01 01:02:03', 'a,"b"\n', 2147483647,
		 ['a'], [NULL], 'ffffffff-ffff-ffff-ffff-ffffffffffff', 9999999.999, 'a', (-1, 'x'), 'lc1', 'v', true,
		 {'a': 0}, '255.255.255.255', '2100-01-01 00:00:00.123', 5, (2, 'z'), [(0, '')], [[3]], {7: ['y', 'z']},
		 123456789012345678901234567890)`
)

// chdbTypes creates the types table in a fresh database of the test's chDB engine.
func chdbTypes(t *testing.T) (*Service, store.Target, func(sql, format string) []byte) {
	t.Helper()
	s := engine.Store(t)
	db := testsvc.UniqueName(t, "chf")
	target := store.Target{Tenant: "t1", Database: db}
	ctx := t.Context()
	for _, sql := range []string{"CREATE DATABASE " + db, fmt.Sprintf(typesTableDDL, db), fmt.Sprintf(typesRows, db)} {
		if err := s.Exec(ctx, store.Target{Database: "default"}, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	t.Cleanup(func() {
		_ = s.Exec(context.Background(), store.Target{Database: "default"}, "DROP DATABASE IF EXISTS "+db)
	})
	c, err := localcache.New(localcache.Config{}, localcache.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	svc, err := New(Config{}, Deps{Store: s, Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	engineOut := func(sql, format string) []byte {
		t.Helper()
		// chDB's defaults differ from a server's in output_format_json_quote_64bit_integers (0 in
		// chDB): the comparison is with what a server writes, so the setting is spelt out.
		out, err := s.QueryFormat(ctx, target, sql+" SETTINGS output_format_json_quote_64bit_integers = 1", format)
		if err != nil {
			t.Fatalf("chDB %s: %v", format, err)
		}
		return out
	}
	return svc, target, engineOut
}

// serveCH runs one ClickHouse-interface read and returns the recorder.
func serveCH(t *testing.T, svc *Service, target store.Target, acc Access, req ClickHouseRead) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	svc.ServeClickHouse(rec, t.Context(), target.Tenant, target, acc, req)
	return rec
}

// statistics matches the counters of the JSON formats, which differ between any two runs.
var statistics = regexp.MustCompile(`(?s)"statistics":.*`)

// TestClickHouseFormatsEqualTheEngines compares every text and binary output format, byte for
// byte, with chDB's own output of the same query (chDB is the current ClickHouse engine).
func TestClickHouseFormatsEqualTheEngines(t *testing.T) {
	svc, target, engineOut := chdbTypes(t)
	const sql = "SELECT * FROM types ORDER BY id"
	for _, format := range []string{
		"TabSeparated", "TSV", "TabSeparatedWithNames", "TSVWithNamesAndTypes", "CSV", "CSVWithNames", "CSVWithNamesAndTypes",
		"JSON", "JSONCompact", "JSONEachRow", "JSONCompactEachRow", "JSONCompactEachRowWithNames",
		"JSONCompactEachRowWithNamesAndTypes", "RowBinary", "RowBinaryWithNames", "RowBinaryWithNamesAndTypes",
	} {
		t.Run(format, func(t *testing.T) {
			rec := serveCH(t, svc, target, Access{}, ClickHouseRead{SQL: sql + " FORMAT " + format})
			wantEngineBytes(t, rec, format, engineOut(sql, format))
		})
	}
}

// firstDiff shows where got and want part.
func firstDiff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-80)
	return fmt.Sprintf("at byte %d\n got: %q\nwant: %q", i, got[from:min(len(got), i+80)], want[from:min(len(want), i+80)])
}

// TestClickHouseDefaultFormatAndFormatClause checks the choice of format: the FORMAT clause
// (with a trailing ';') over default_format over TabSeparated.
func TestClickHouseDefaultFormatAndFormatClause(t *testing.T) {
	svc, target, _ := chdbTypes(t)
	for _, c := range []struct {
		sql, def, want string
	}{
		{"SELECT 1 AS x", "", "TabSeparated"},
		{"SELECT 1 AS x", "JSONEachRow", "JSONEachRow"},
		{"SELECT 1 AS x FORMAT CSV;", "JSONEachRow", "CSV"},
		{"SELECT 1 AS x\nFORMAT TSV", "", "TabSeparated"},
	} {
		rec := serveCH(t, svc, target, Access{}, ClickHouseRead{SQL: c.sql, Format: c.def})
		if rec.Code != 200 || rec.Header().Get("X-ClickHouse-Format") != c.want {
			t.Errorf("%q default %q: status %d format %q, want %q (%s)", c.sql, c.def, rec.Code, rec.Header().Get("X-ClickHouse-Format"), c.want, rec.Body)
		}
	}
	rec := serveCH(t, svc, target, Access{}, ClickHouseRead{SQL: "SELECT 1 FORMAT Parquet"})
	if rec.Code != 400 || rec.Header().Get("X-ClickHouse-Exception-Code") != "73" ||
		!strings.HasPrefix(rec.Body.String(), "Code: 73. DB::Exception: Unknown output format Parquet") ||
		!strings.Contains(rec.Body.String(), "JSONEachRow") || !strings.Contains(rec.Body.String(), "(UNKNOWN_FORMAT)") {
		t.Errorf("unknown format: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	rec = serveCH(t, svc, target, Access{}, ClickHouseRead{SQL: "SELECT 1 FORMAT json"})
	if rec.Code != 400 || rec.Header().Get("X-ClickHouse-Exception-Code") != "73" {
		t.Errorf("format names are case-sensitive, as ClickHouse's: json was accepted: %d %s", rec.Code, rec.Body)
	}
}

func TestClickHouseHeaders(t *testing.T) {
	svc, target, _ := chdbTypes(t)
	rec := serveCH(t, svc, target, Access{}, ClickHouseRead{SQL: "SELECT id FROM types FORMAT CSVWithNames", QueryID: "q-1"})
	h := rec.Header()
	if rec.Code != 200 || h.Get("Content-Type") != "text/csv; charset=UTF-8; header=present" || h.Get("X-ClickHouse-Query-Id") != "q-1" ||
		h.Get("X-ClickHouse-Timezone") != "UTC" || h.Get("X-ClickHouse-Format") != "CSVWithNames" || h.Get("X-Cache") != "MISS" ||
		!strings.Contains(h.Get("X-ClickHouse-Summary"), `"result_rows":"3"`) {
		t.Fatalf("%d %v", rec.Code, h)
	}
	rec = serveCH(t, svc, target, Access{}, ClickHouseRead{SQL: "SELECT id FROM types FORMAT CSVWithNames"})
	if id := rec.Header().Get("X-ClickHouse-Query-Id"); !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) {
		t.Errorf("generated query id %q", id)
	}
}

// TestClickHouseCacheAndInvalidation: a repeated read is a cache hit, and an insert's bump of
// the table's version makes the next one read again.
func TestClickHouseCacheAndInvalidation(t *testing.T) {
	f := newFixture(t, nil)
	read := func() *httptest.ResponseRecorder {
		return serveCH(t, f.svc, f.target, Access{}, ClickHouseRead{SQL: "SELECT count() FROM events FORMAT TSV"})
	}
	if r := read(); r.Header().Get("X-Cache") != "MISS" || r.Body.String() != "1\n" {
		t.Fatalf("first: %v %q", r.Header(), r.Body)
	}
	if r := read(); r.Header().Get("X-Cache") != "HIT" || r.Body.String() != "1\n" {
		t.Fatalf("second: %v %q", r.Header(), r.Body)
	}
	f.insert(t, `[2,"bob"]`)
	if err := f.cache.BumpTable(t.Context(), f.target.Tenant, "events"); err != nil {
		t.Fatal(err)
	}
	if r := read(); r.Header().Get("X-Cache") != "MISS" || r.Body.String() != "2\n" {
		t.Fatalf("after the insert: %v %q", r.Header(), r.Body)
	}
	if r := serveCH(t, f.svc, f.target, Access{}, ClickHouseRead{SQL: "SELECT count() FROM events FORMAT TSV",
		Settings: url.Values{"use_query_cache": {"0"}}}); r.Header().Get("X-Cache") != "BYPASS" || r.Body.String() != "2\n" {
		t.Fatalf("use_query_cache=0: %v %q", r.Header(), r.Body)
	}
	// The same query in another format is another result.
	r := serveCH(t, f.svc, f.target, Access{}, ClickHouseRead{SQL: "SELECT count() FROM events FORMAT JSONEachRow"})
	if r.Header().Get("X-Cache") != "MISS" || r.Body.String() != "{\"count()\":\"2\"}\n" {
		t.Fatalf("other format: %v %q", r.Header(), r.Body)
	}
	r = serveCH(t, f.svc, f.target, Access{}, ClickHouseRead{SQL: "SELECT count() FROM events FORMAT JSONEachRow",
		Settings: url.Values{"output_format_json_quote_64bit_integers": {"0"}}})
	if r.Header().Get("X-Cache") != "MISS" || r.Body.String() != "{\"count()\":2}\n" {
		t.Fatalf("unquoted 64-bit integers: %v %q", r.Header(), r.Body)
	}
}

// TestClickHouseConfinementAndRefusals: the ClickHouse interface is confined and read-only like
// /v1/query, with ClickHouse-style errors.
func TestClickHouseConfinementAndRefusals(t *testing.T) {
	f := newFixture(t, nil)
	other := newFixture(t, nil)
	only := func(name string) func(string) bool { return func(t string) bool { return t == name } }
	for _, c := range []struct {
		name   string
		acc    Access
		req    ClickHouseRead
		status int
		code   string
		text   string
	}{
		{"another tenant's table", Access{AllowTable: only("events")}, ClickHouseRead{SQL: "SELECT * FROM " + other.target.Database + ".events"}, 403, "497", "another database"},
		{"a table the key may not read", Access{AllowTable: only("visits")}, ClickHouseRead{SQL: "SELECT * FROM events"}, 403, "497", `"events"`},
		{"unknown table", Access{}, ClickHouseRead{SQL: "SELECT * FROM nope"}, 404, "60", "nope"},
		{"create", Access{}, ClickHouseRead{SQL: "CREATE TABLE x (a UInt8) ENGINE = Memory"}, 403, "164", "CREATE is not supported"},
		{"drop", Access{}, ClickHouseRead{SQL: "/* c */ DROP TABLE events"}, 403, "164", "DROP"},
		{"set", Access{}, ClickHouseRead{SQL: "SET max_threads = 1"}, 403, "164", "SET"},
		{"system", Access{}, ClickHouseRead{SQL: "SYSTEM FLUSH LOGS"}, 403, "164", "SYSTEM"},
		{"insert select", Access{}, ClickHouseRead{SQL: "INSERT INTO events SELECT * FROM events"}, 501, "48", "INSERT … SELECT"},
		{"empty", Access{}, ClickHouseRead{SQL: " ;"}, 400, "62", ""},
		{"two statements", Access{}, ClickHouseRead{SQL: "SELECT 1; SELECT 2"}, 400, "62", "multiple statements"},
		{"unknown setting", Access{}, ClickHouseRead{SQL: "SELECT 1", Settings: url.Values{"max_bogus": {"1"}}}, 400, "115", "max_bogus"},
		{"unknown block compression method", Access{}, ClickHouseRead{SQL: "SELECT 1", Settings: url.Values{"compress": {"1"}, "network_compression_method": {"snappy"}}}, 400, "89", "snappy"},
		{"row limit", Access{}, ClickHouseRead{SQL: "SELECT number FROM system.numbers LIMIT 10", Settings: url.Values{"max_result_rows": {"3"}}}, 422, "158", "max_rows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := serveCH(t, f.svc, f.target, c.acc, c.req)
			body := rec.Body.String()
			if rec.Code != c.status || rec.Header().Get("X-ClickHouse-Exception-Code") != c.code ||
				!strings.HasPrefix(body, "Code: "+c.code+". DB::Exception: ") || !strings.Contains(body, c.text) {
				t.Errorf("status %d code %q body %q, want %d, %s, %q", rec.Code, rec.Header().Get("X-ClickHouse-Exception-Code"), body, c.status, c.code, c.text)
			}
		})
	}
	// Accepted client settings change nothing.
	rec := serveCH(t, f.svc, f.target, Access{}, ClickHouseRead{SQL: "SELECT id FROM events", Settings: url.Values{
		"database": {"db1"}, "query_id": {"x"}, "default_format": {"TSV"}, "enable_http_compression": {"1"},
		"client_protocol_version": {"54460"}, "max_execution_time": {"60"}, "readonly": {"1"}, "wait_end_of_query": {"1"},
	}})
	if rec.Code != 200 || rec.Body.String() != "1\n" {
		t.Errorf("client settings: %d %q", rec.Code, rec.Body)
	}
	// Parameters as ClickHouse clients send them.
	rec = serveCH(t, f.svc, f.target, Access{}, ClickHouseRead{SQL: "SELECT user FROM events WHERE id = {id:UInt64} AND user = {u:String}",
		Settings: url.Values{"param_id": {"1"}, "param_u": {"ann"}}})
	if rec.Code != 200 || rec.Body.String() != "ann\n" {
		t.Errorf("parameters: %d %q", rec.Code, rec.Body)
	}
}

// wantEngineBytes requires a 200 answer in format that is the engine's own bytes want (JSON's
// timing statistics aside).
func wantEngineBytes(t *testing.T, rec *httptest.ResponseRecorder, format string, want []byte) {
	t.Helper()
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	got := rec.Body.Bytes()
	if strings.HasPrefix(format, "JSON") {
		got, want = statistics.ReplaceAll(got, nil), statistics.ReplaceAll(want, nil)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the engine's:\n%s", format, firstDiff(got, want))
	}
}
