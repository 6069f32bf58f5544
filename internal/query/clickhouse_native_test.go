package query

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
)

// decodeNative decodes every block of a Native stream with clickhouse-go's own decoder at
// revision, returning the rows as the driver's Go values, column by column.
func decodeNative(t *testing.T, b []byte, revision uint64) (names []string, types []string, rows [][]any) {
	t.Helper()
	r := chproto.NewReader(bufio.NewReader(bytes.NewReader(b)))
	for blocks := 0; ; blocks++ {
		sc := column.ServerContext{Revision: revision, VersionMajor: 25, VersionMinor: 8, Timezone: time.UTC}
		block := proto.Block{ServerContext: &sc}
		if err := block.Decode(r, revision); err != nil {
			if err == io.EOF || strings.Contains(err.Error(), "EOF") {
				if blocks == 0 && len(b) > 0 {
					t.Fatalf("no block decoded from %d bytes: %v", len(b), err)
				}
				return names, types, rows
			}
			t.Fatalf("block %d: %v", blocks, err)
		}
		names = block.ColumnsNames()
		types = types[:0]
		for _, c := range block.Columns {
			types = append(types, string(c.Type()))
		}
		for i := range block.Rows() {
			var row []any
			for _, c := range block.Columns {
				row = append(row, c.Row(i, false))
			}
			rows = append(rows, row)
		}
	}
}

// TestClickHouseNativeEqualsTheEngines: the Native output of a real query decodes, with
// clickhouse-go's decoder, to the values of the engine's own Native output of the same query;
// at revision 0 (no client_protocol_version) the bytes are the engine's.
func TestClickHouseNativeEqualsTheEngines(t *testing.T) {
	svc, target, engineOut := chdbTypes(t)
	const all = "SELECT * FROM types ORDER BY id"
	want := engineOut(all, "Native")
	wantNames, wantTypes, wantRows := decodeNative(t, want, 0)
	if len(wantRows) != 3 {
		t.Fatalf("engine's Native decodes to %d rows", len(wantRows))
	}
	for _, rev := range []string{"", "54460", "99999"} {
		t.Run("revision "+rev, func(t *testing.T) {
			settings := url.Values{}
			if rev != "" {
				settings.Set("client_protocol_version", rev)
			}
			rec := serveCH(t, svc, target, Access{}, ClickHouseRead{SQL: all, Format: "Native", Settings: settings})
			if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/octet-stream" {
				t.Fatalf("%d %v %q", rec.Code, rec.Header(), rec.Body)
			}
			revision := uint64(0)
			if rev != "" {
				revision = ServerRevision
			}
			names, types, rows := decodeNative(t, rec.Body.Bytes(), revision)
			if !reflect.DeepEqual(names, wantNames) || !reflect.DeepEqual(types, wantTypes) {
				t.Fatalf("columns %v %v, want %v %v", names, types, wantNames, wantTypes)
			}
			for i := range wantRows {
				for j := range wantRows[i] {
					if !reflect.DeepEqual(rows[i][j], wantRows[i][j]) {
						t.Errorf("row %d column %s: %#v, want %#v", i, names[j], rows[i][j], wantRows[i][j])
					}
				}
			}
		})
	}
	// Byte for byte at revision 0, LowCardinality columns aside (their dictionaries are the
	// engine's business: any order decodes to the same values).
	const noLC = "SELECT * EXCEPT (lc, lcn) FROM types ORDER BY id"
	rec := serveCH(t, svc, target, Access{}, ClickHouseRead{SQL: noLC + " FORMAT Native"})
	if got, want := rec.Body.Bytes(), engineOut(noLC, "Native"); !bytes.Equal(got, want) {
		t.Errorf("Native differs from the engine's:\n%s", firstDiff(got, want))
	}
	// An empty result is one block of no rows naming the columns.
	rec = serveCH(t, svc, target, Access{}, ClickHouseRead{SQL: "SELECT id, s FROM types WHERE id > 100 FORMAT Native"})
	if names, _, rows := decodeNative(t, rec.Body.Bytes(), 0); !reflect.DeepEqual(names, []string{"id", "s"}) || len(rows) != 0 {
		t.Errorf("empty result: %v %v", names, rows)
	}
}

// TestClickHouseConnectQueryInNative answers clickhouse-go's connect query itself, in Native
// at the client's revision, with the server identity the gateway claims.
func TestClickHouseConnectQueryInNative(t *testing.T) {
	f := newFixture(t, nil)
	rec := serveCH(t, f.svc, f.target, Access{}, ClickHouseRead{SQL: "SELECT displayName(), version(), revision(), timezone()",
		Format: "Native", Settings: url.Values{"client_protocol_version": {"54460"}, "default_format": {"Native"}, "database": {"db1"}}})
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	names, types, rows := decodeNative(t, rec.Body.Bytes(), 54460)
	want := []any{ServerDisplayName, ServerVersion, uint32(ServerRevision), "UTC"}
	if !reflect.DeepEqual(names, []string{"displayName()", "version()", "revision()", "timezone()"}) ||
		!reflect.DeepEqual(types, []string{"String", "String", "UInt32", "String"}) || len(rows) != 1 || !reflect.DeepEqual(rows[0], want) {
		t.Fatalf("%v %v %v", names, types, rows)
	}
	if f.svc.Executions() != 0 {
		t.Errorf("the connect query reached the store")
	}
}

// TestClickHouseGoClientOverHTTP drives the real clickhouse-go client in HTTP mode against
// ServeClickHouse: its connect query, Ping (SELECT 1) and a Query scanned into Go values.
func TestClickHouseGoClientOverHTTP(t *testing.T) {
	f := newFixture(t, nil)
	f.insert(t, `[2,"bob\tby"]`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		q := r.URL.Query()
		sql := q.Get("query")
		if len(body) > 0 {
			sql += "\n" + string(body)
		}
		f.svc.ServeClickHouse(w, r.Context(), f.target.Tenant, f.target, Access{},
			ClickHouseRead{SQL: sql, Format: q.Get("default_format"), Settings: q, QueryID: q.Get("query_id")})
	}))
	defer srv.Close()
	conn, err := clickhouse.Open(&clickhouse.Options{Protocol: clickhouse.HTTP, Addr: []string{strings.TrimPrefix(srv.URL, "http://")},
		Auth: clickhouse.Auth{Database: "db1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Ping(t.Context()); err != nil {
		t.Fatalf("ping: %v", err)
	}
	v, err := conn.ServerVersion()
	if err != nil || v.DisplayName != ServerDisplayName || v.Revision != ServerRevision || v.Version.Major != 25 {
		t.Fatalf("server version %+v %v", v, err)
	}
	rows, err := conn.Query(t.Context(), "SELECT id, user FROM events ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id uint64
		var user string
		if err := rows.Scan(&id, &user); err != nil {
			t.Fatal(err)
		}
		got = append(got, user)
	}
	if err := rows.Err(); err != nil || !reflect.DeepEqual(got, []string{"ann", "bob\tby"}) {
		t.Fatalf("%v %v", got, err)
	}
	_, err = conn.Query(t.Context(), "SELECT * FROM nope")
	var ex *clickhouse.Exception
	if err == nil || !asException(err, &ex) || ex.Code != 60 {
		t.Fatalf("unknown table through the client: %v", err)
	}
}

func asException(err error, ex **clickhouse.Exception) bool { return errors.As(err, ex) }

// TestClickHouseErrorAfterTheFirstRows: an error the engine reports once rows were sent (a
// result too large to buffer, streamed) ends the output with ClickHouse's error text, which the
// clickhouse-go client surfaces from a Native stream as the engine's exception.
func TestClickHouseErrorAfterTheFirstRows(t *testing.T) {
	f := newFixture(t, nil)
	svc, err := New(Config{}, Deps{Store: f.store}) // no cache: every read streams
	if err != nil {
		t.Fatal(err)
	}
	const sql = "SELECT number, throwIf(number = 1000000) FROM system.numbers LIMIT 1100000"
	rec := serveCH(t, svc, f.target, Access{}, ClickHouseRead{SQL: sql + " FORMAT TSV"})
	body := rec.Body.String()
	if rec.Code != 200 || !strings.HasPrefix(body, "0\t0\n") || !strings.Contains(body, "\nCode: 395. DB::Exception: ") {
		t.Fatalf("%d %q … %q", rec.Code, body[:min(len(body), 20)], body[max(0, len(body)-300):])
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		q := r.URL.Query()
		svc.ServeClickHouse(w, r.Context(), f.target.Tenant, f.target, Access{},
			ClickHouseRead{SQL: string(body), Format: q.Get("default_format"), Settings: q})
	}))
	defer srv.Close()
	conn, err := clickhouse.Open(&clickhouse.Options{Protocol: clickhouse.HTTP, Addr: []string{strings.TrimPrefix(srv.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(t.Context(), sql)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	var ex *clickhouse.Exception
	if err := rows.Err(); !asException(err, &ex) || ex.Code != 395 || n == 0 {
		t.Fatalf("after %d rows: %v", n, err)
	}
	_ = rows.Close()
}
