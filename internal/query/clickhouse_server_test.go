package query

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// The types table on a ClickHouse 18.16 server: the types it has, and values on which 18.16 and
// current servers write the same text (decimals with all their scale digits, dates after 1970,
// floats a Float32 holds exactly). What differs is listed in docs/clickhouse.md#reads.
const (
	serverTypesDDL = `CREATE TABLE %s.types (id UInt64, i8 Int8, i64 Int64, u64 UInt64, f Float64, f32 Float32,
		s String, fs FixedString(3), d Date, dt DateTime, n Nullable(String), ni Nullable(Int32),
		a Array(String), ai Array(Nullable(Int64)), u UUID, dec Decimal(10,3), e Enum8('a'=1,'b\'q'=2),
		t Tuple(Int32, String), lc LowCardinality(String),
		lcn LowCardinality(Nullable(String)), fl Float64) ENGINE = MergeTree ORDER BY id
		SETTINGS index_granularity = 8192`
	serverTypesRows = `INSERT INTO %s.types VALUES
		(1, -128, -9223372036854775808, 18446744073709551615, 1.5, 0.1, 'tab\there\nnl\\bs \'q" dq/sl\r\0z', 'ab',
		 '2024-02-29', '2024-02-29 23:59:59', NULL, NULL, ['x,y', '"q"', '', 'tab\t', 'NULL', '\\N'], [1, NULL, -3],
		 '123e4567-e89b-12d3-a456-426614174000', -12.345, 'b\'q', (7, 'tu\tple'), 'lc1', NULL, 1e300),
		(2, 127, 9223372036854775807, 0, -0.00001, 0.5, 'ünïcødé 😀 \x01 \x1B \x7F ` + "\u2028" + `', 'xyz',
		 '2000-01-01', '2000-01-01 00:00:00', '', -5, [], [], '00000000-0000-0000-0000-000000000000', 0.001, 'a',
		 (0, ''), '', 'v', 1000000),
		(3, 0, 0, 42, 1e-7, -1.25, '', '', '2100-12-31', '2100-01-01 01:02:03', 'a,"b"\n', 2147483647,
		 ['a'], [NULL], 'ffffffff-ffff-ffff-ffff-ffffffffffff', 9999999.999, 'a', (-1, 'x'), 'lc1', 'v',
		 123456789012345678901234567890)`
)

// TestClickHouseFormatsEqualTheServers compares each output format, byte for byte, with a real
// ClickHouse server's answer over its own HTTP interface to the same query, the gateway
// reading through the clickhouse store backend.
func TestClickHouseFormatsEqualTheServers(t *testing.T) {
	ch := testsvc.ClickHouseServer(t)
	db := ch.CreateDatabase(t, "chf")
	ctx := t.Context()
	if _, err := httpQuery(ctx, ch.HTTPAddr, fmt.Sprintf(serverTypesDDL, db), url.Values{"allow_experimental_low_cardinality_type": {"1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Query(ctx, fmt.Sprintf(serverTypesRows, db)); err != nil {
		t.Fatal(err)
	}
	st, err := clickhousestore.New(clickhousestore.Config{Endpoint: clickhousestore.Endpoint{Addr: []string{ch.NativeAddr}}}, clickhousestore.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	svc := describeService(t, st)
	target := store.Target{Tenant: "t1", Database: db}
	const all = "SELECT * FROM types ORDER BY id"
	// Current servers spread Tuples over lines in the JSON format (output_format_json_pretty_print);
	// 18.16 does not. Both agree on everything else. LowCardinality dictionaries in Native are
	// the engine's business (TestClickHouseNativeEqualsTheEngines decodes them).
	const (
		noTuples = "SELECT id, i8, i64, u64, f, f32, s, fs, d, dt, n, ni, a, ai, u, dec, e, lc, lcn, fl FROM types ORDER BY id"
		noLC     = "SELECT id, i8, i64, u64, f, f32, s, fs, d, dt, n, ni, a, ai, u, dec, e, t, fl FROM types ORDER BY id"
	)
	for _, c := range []struct{ format, sql string }{
		{"TabSeparated", all}, {"TabSeparatedWithNames", all}, {"TabSeparatedWithNamesAndTypes", all},
		{"CSV", all}, {"CSVWithNames", all}, {"JSON", noTuples}, {"JSONCompact", all}, {"JSONEachRow", all},
		{"RowBinary", all}, {"Native", noLC},
	} {
		t.Run(c.format, func(t *testing.T) {
			sql := c.sql
			rec := serveCH(t, svc, target, Access{}, ClickHouseRead{SQL: sql + " FORMAT " + c.format})
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			want, err := httpQuery(ctx, ch.HTTPAddr, sql+" FORMAT "+c.format, url.Values{"database": {db}})
			if err != nil {
				t.Fatal(err)
			}
			got := rec.Body.Bytes()
			if strings.HasPrefix(c.format, "JSON") {
				got, want = statistics.ReplaceAll(got, nil), statistics.ReplaceAll(want, nil)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the server's:\n%s", c.format, firstDiff(got, want))
			}
		})
	}
}

// httpQuery runs sql on a ClickHouse server's HTTP interface.
func httpQuery(ctx context.Context, addr, sql string, params url.Values) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/?"+params.Encode(), strings.NewReader(sql))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return b, err
}
