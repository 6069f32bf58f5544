package query

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/cache/localcache"
	"github.com/wavehouse/wavehouse/internal/query/sqlscan"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// describeDDL is a table both stores have: comments, defaults, MATERIALIZED and ALIAS columns
// (last: ClickHouse 18.16 lists them after the ordinary columns whatever their place).
// describeModernCols are columns only current engines have: a codec and a column TTL.
const (
	describeDDL = `CREATE TABLE %s.d (id UInt64 COMMENT 'the id', s String DEFAULT 'x', n Nullable(String) COMMENT 'tab	and \'q\'',
		e Enum8('a' = 1, 'b\'q' = 2), dt Date, ar Array(Nullable(Int32)) %s, m UInt64 MATERIALIZED id + 1,
		al String ALIAS concat(s, '!')) ENGINE = MergeTree ORDER BY id`
	describeModernCols = `, c String CODEC(ZSTD(1)), x UInt8 TTL dt + toIntervalDay(1)`
)

// describeFormats are the output formats a DESCRIBE is compared in.
var describeFormats = []string{
	"TabSeparated", "TabSeparatedWithNames", "TSVWithNamesAndTypes", "CSV", "CSVWithNamesAndTypes",
	"JSON", "JSONCompact", "JSONEachRow", "JSONCompactEachRowWithNamesAndTypes", "RowBinary",
	"RowBinaryWithNamesAndTypes", "Native",
}

// chdbDescribe creates the describe table (with extra columns) in a fresh chDB database and
// returns a service reading it with the database's target, and the engine's own answer.
func chdbDescribe(t *testing.T, extra string) (*Service, store.Target, func(sql, format string) []byte) {
	t.Helper()
	s := engine.Store(t)
	db := testsvc.UniqueName(t, "chd")
	ctx := t.Context()
	for _, sql := range []string{"CREATE DATABASE " + db, fmt.Sprintf(describeDDL, db, extra)} {
		if err := s.Exec(ctx, store.Target{Database: "default"}, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	t.Cleanup(func() {
		_ = s.Exec(context.Background(), store.Target{Database: "default"}, "DROP DATABASE IF EXISTS "+db)
	})
	svc := describeService(t, s)
	target := store.Target{Tenant: "t1", Database: db}
	return svc, target, func(sql, format string) []byte {
		t.Helper()
		out, err := s.QueryFormat(ctx, target, sql, format)
		if err != nil {
			t.Fatalf("chDB %s %s: %v", sql, format, err)
		}
		return out
	}
}

// describeService is a service over st with a result cache (which a DESCRIBE must bypass).
func describeService(t *testing.T, st store.Querier) *Service {
	t.Helper()
	c, err := localcache.New(localcache.Config{}, localcache.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	svc, err := New(Config{}, Deps{Store: st, Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// compareDescribe requires the gateway's answer to sql in every describeFormats format to be
// the engine's bytes.
func compareDescribe(t *testing.T, svc *Service, target store.Target, sql string, engineOut func(sql, format string) []byte) {
	t.Helper()
	for _, format := range describeFormats {
		t.Run(format, func(t *testing.T) {
			rec := serveCH(t, svc, target, Access{}, ClickHouseRead{SQL: sql, Format: format})
			wantEngineBytes(t, rec, format, engineOut(sql, format))
			if x := rec.Header().Get("X-Cache"); x != "BYPASS" {
				t.Errorf("X-Cache %q, want BYPASS (a schema change bumps no table version)", x)
			}
		})
	}
}

// TestClickHouseDescribeEqualsTheEngine: on chDB, DESCRIBE is the engine's own answer, byte
// for byte, in every format, codecs and TTLs included.
func TestClickHouseDescribeEqualsTheEngine(t *testing.T) {
	svc, target, engineOut := chdbDescribe(t, describeModernCols)
	compareDescribe(t, svc, target, "DESCRIBE TABLE d", engineOut)
	t.Run("qualified DESC", func(t *testing.T) {
		sql := "DESC " + target.Database + ".d FORMAT JSONCompact"
		rec := serveCH(t, svc, target, Access{}, ClickHouseRead{SQL: sql})
		got, want := statistics.ReplaceAll(rec.Body.Bytes(), nil), statistics.ReplaceAll(engineOut(sql, "JSONCompact"), nil)
		if rec.Code != 200 || !bytes.Equal(got, want) {
			t.Errorf("status %d:\n%s", rec.Code, firstDiff(got, want))
		}
	})
}

// TestClickHouseDescribeOnTheServer: a ClickHouse 18.16 server answers DESCRIBE with five
// columns (comment_expression, no codec_expression or ttl_expression); through the gateway it
// is current ClickHouse's seven, byte for byte what chDB answers for the same table, in every
// format (what clickhouse-go's PrepareBatch scans).
func TestClickHouseDescribeOnTheServer(t *testing.T) {
	ch := testsvc.ClickHouseServer(t)
	db := ch.CreateDatabase(t, "chd")
	if _, err := ch.Query(t.Context(), fmt.Sprintf(describeDDL, db, "")); err != nil {
		t.Fatal(err)
	}
	st, err := clickhousestore.New(clickhousestore.Config{Endpoint: clickhousestore.Endpoint{Addr: []string{ch.NativeAddr}}}, clickhousestore.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	svc := describeService(t, st)
	target := store.Target{Tenant: "t1", Database: db}
	own, err := httpQuery(t.Context(), ch.HTTPAddr, "DESCRIBE TABLE d FORMAT TSVWithNames", url.Values{"database": {db}})
	if err != nil || !strings.HasPrefix(string(own), "name\ttype\tdefault_type\tdefault_expression\tcomment_expression\n") {
		t.Fatalf("the server's own DESCRIBE is no longer 18.16's five columns (%v): %q", err, own)
	}
	_, _, engineOut := chdbDescribe(t, "")
	compareDescribe(t, svc, target, "DESCRIBE TABLE d", engineOut)

	rec := serveCH(t, svc, target, Access{}, ClickHouseRead{SQL: "DESCRIBE TABLE nope"})
	if rec.Code != 404 || rec.Header().Get("X-ClickHouse-Exception-Code") != "60" || !strings.HasPrefix(rec.Body.String(), "Code: 60. DB::Exception: ") ||
		!strings.Contains(rec.Body.String(), "nope") {
		t.Errorf("unknown table on the server: %d %v %q", rec.Code, rec.Header(), rec.Body)
	}
}

// TestClickHouseDescribeConfinement: DESCRIBE is a read of its table: a key restricted to tables
// describes only those and nothing of another database; an unknown table is UNKNOWN_TABLE;
// under a token's role it lists only the columns the role may read (instead of being refused),
// and the rest of the role still applies.
func TestClickHouseDescribeConfinement(t *testing.T) {
	svc, target, _ := chdbDescribe(t, "")
	other := testsvc.UniqueName(t, "chd")
	only := func(name string) func(string) bool { return func(t string) bool { return t == name } }
	rewriteErr := fmt.Errorf("%w: the role's rewrite was asked", sqlscan.ErrRejected)
	refuse := func(string) (string, []store.Param, error) { return "", nil, rewriteErr }
	hide := func(table string) (func(string) bool, error) {
		if table != "d" {
			return nil, nil
		}
		return func(col string) bool { return col != "n" && col != "e" }, nil
	}
	for _, c := range []struct {
		name   string
		acc    Access
		sql    string
		status int
		code   string
		text   string
	}{
		{"a table the key may not read", Access{AllowTable: only("events")}, "DESCRIBE TABLE d", 403, "497", `"d"`},
		{"another database", Access{AllowTable: only("d")}, "DESCRIBE TABLE " + other + ".d", 403, "497", "another database"},
		{"unsure under a restricted key", Access{AllowTable: only("d")}, "DESCRIBE (SELECT * FROM d)", 403, "497", "could not be determined"},
		{"unknown table", Access{}, "DESC nope", 404, "60", "nope"},
		{"a role without Readable", Access{AllowTable: only("d"), Policy: refuse}, "DESCRIBE d", 400, "62", "rewrite was asked"},
		{"a role's Readable fails", Access{AllowTable: only("d"), Policy: refuse, Readable: func(string) (func(string) bool, error) { return nil, store.ErrUnknownTable }}, "DESCRIBE d", 404, "60", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := serveCH(t, svc, target, c.acc, ClickHouseRead{SQL: c.sql})
			body := rec.Body.String()
			if rec.Code != c.status || rec.Header().Get("X-ClickHouse-Exception-Code") != c.code || !strings.Contains(body, c.text) {
				t.Errorf("status %d code %q body %q, want %d, %q, %q", rec.Code, rec.Header().Get("X-ClickHouse-Exception-Code"), body, c.status, c.code, c.text)
			}
		})
	}
	t.Run("a role's columns", func(t *testing.T) {
		rec := serveCH(t, svc, target, Access{AllowTable: only("d"), Policy: refuse, Readable: hide}, ClickHouseRead{SQL: "DESCRIBE TABLE d FORMAT TSV"})
		const want = "id\tUInt64\t\t\tthe id\t\t\ns\tString\tDEFAULT\t\\'x\\'\t\t\t\ndt\tDate\t\t\t\t\t\n" +
			"ar\tArray(Nullable(Int32))\t\t\t\t\t\nm\tUInt64\tMATERIALIZED\tid + 1\t\t\t\nal\tString\tALIAS\tconcat(s, \\'!\\')\t\t\t\n"
		if rec.Code != 200 || rec.Body.String() != want {
			t.Errorf("status %d body %q, want %q", rec.Code, rec.Body, want)
		}
	})
}
