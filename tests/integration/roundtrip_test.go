package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// backendMatrix is every combination of store and queue backend.
var backendMatrix = []struct{ store, mq string }{
	{storeCHDB, mqEmbedded},
	{storeCHDB, mqNATS},
	{storeClickHouse, mqEmbedded},
	{storeClickHouse, mqNATS},
}

// typesDDL creates the table of many types. LowCardinality needs a setting on the old
// ClickHouse server the tests run against, so it only exists on chDB.
func typesDDL(table string, lowCardinality bool) string {
	cols := []string{
		"id String", "s String", "u UInt64", "i Int64", "f Float64", "n Nullable(String)",
		"ni Nullable(Int32)", "a Array(String)", "ai Array(Int64)", "d Date", "dt DateTime('UTC')",
		"uu UUID", "dec Decimal(18, 4)", "e Enum8('a' = 1, 'b' = 2)", "fs FixedString(3)", "b UInt8",
	}
	if lowCardinality {
		cols = append(cols, "lc LowCardinality(String)")
	}
	return fmt.Sprintf("CREATE TABLE %s (%s) ENGINE = MergeTree() ORDER BY id", table, strings.Join(cols, ", "))
}

// typesSelect reads every column as ClickHouse renders it with toString, so the comparison is
// exact (64-bit integers, decimals, padding of FixedString) and the same on every backend.
func typesSelect(lowCardinality bool) string {
	cols := []string{"id", "s", "u", "i", "f", "n", "ni", "a", "ai", "d", "dt", "uu", "dec", "e", "fs", "b"}
	if lowCardinality {
		cols = append(cols, "lc")
	}
	var sel []string
	for _, c := range cols {
		if c == "fs" {
			// toString cuts a FixedString at its padding; hex shows every byte.
			sel = append(sel, "hex(fs) AS fs")
			continue
		}
		sel = append(sel, fmt.Sprintf("toString(%s) AS %s", c, c))
	}
	return "SELECT " + strings.Join(sel, ", ") + " FROM {table} ORDER BY id"
}

// typedRow is one row as sent and as ClickHouse must hold it (toString of every column, hex of the
// FixedString; nil is NULL).
type typedRow struct {
	in   string
	want map[string]any
}

func typedRows(lowCardinality bool) []typedRow {
	rows := []typedRow{
		{
			in: `{"id":"r0","s":"quote \" backslash \\ newline \n tab \t 日本語 🎉","u":18446744073709551615,"i":-9223372036854775808,` +
				`"f":1.5,"n":null,"ni":null,"a":[],"ai":[],"d":"2024-02-29","dt":"2024-01-02T03:04:05Z",` +
				`"uu":"123e4567-e89b-12d3-a456-426614174000","dec":"12.3456","e":"b","fs":"abc","b":255,"lc":"héllo ✓"}`,
			want: map[string]any{"id": "r0", "s": "quote \" backslash \\ newline \n tab \t 日本語 🎉", "u": "18446744073709551615",
				"i": "-9223372036854775808", "f": "1.5", "n": nil, "ni": nil, "a": "[]", "ai": "[]", "d": "2024-02-29",
				"dt": "2024-01-02 03:04:05", "uu": "123e4567-e89b-12d3-a456-426614174000", "dec": "12.3456", "e": "b",
				"fs": "616263", "b": "255", "lc": "héllo ✓"},
		},
		{
			in: `{"id":"r1","s":"","u":0,"i":9223372036854775807,"f":-0.25,"n":"ünïcødé","ni":-2147483648,` +
				`"a":["x","日本","🎉"],"ai":[-9223372036854775808,9223372036854775807],"d":"1970-01-02","dt":"2024-12-31 23:59:59",` +
				`"uu":"00000000-0000-0000-0000-000000000000","dec":-0.0001,"e":"a","fs":"ab","b":0,"lc":""}`,
			want: map[string]any{"id": "r1", "s": "", "u": "0", "i": "9223372036854775807", "f": "-0.25", "n": "ünïcødé",
				"ni": "-2147483648", "a": "['x','日本','🎉']", "ai": "[-9223372036854775808,9223372036854775807]",
				"d": "1970-01-02", "dt": "2024-12-31 23:59:59", "uu": "00000000-0000-0000-0000-000000000000",
				"dec": "-0.0001", "e": "a", "fs": "616200", "b": "0", "lc": ""},
		},
	}
	// Rows r2..r7 are simple variations so each body shape carries distinct ids.
	for k := 2; k <= 7; k++ {
		id := fmt.Sprintf("r%d", k)
		rows = append(rows, typedRow{
			in: fmt.Sprintf(`{"id":%q,"s":"row %d","u":%d,"i":-%d,"f":%d.5,"n":"n%d","ni":%d,"a":["a%d"],"ai":[%d],"d":"2023-06-%02d",`+
				`"dt":"2023-06-%02dT12:00:00Z","uu":"123e4567-e89b-12d3-a456-42661417400%d","dec":"%d.0001","e":"a","fs":"x%d","b":%d,"lc":"lc%d"}`,
				id, k, k, k, k, k, k, k, k, k, k, k, k, k, k, k),
			want: map[string]any{"id": id, "s": fmt.Sprintf("row %d", k), "u": fmt.Sprint(k), "i": fmt.Sprintf("-%d", k),
				"f": fmt.Sprintf("%d.5", k), "n": fmt.Sprintf("n%d", k), "ni": fmt.Sprint(k), "a": fmt.Sprintf("['a%d']", k),
				"ai": fmt.Sprintf("[%d]", k), "d": fmt.Sprintf("2023-06-%02d", k), "dt": fmt.Sprintf("2023-06-%02d 12:00:00", k),
				"uu": fmt.Sprintf("123e4567-e89b-12d3-a456-42661417400%d", k), "dec": fmt.Sprintf("%d.0001", k), "e": "a",
				"fs": fmt.Sprintf("783%d00", k), "b": fmt.Sprint(k), "lc": fmt.Sprintf("lc%d", k)},
		})
	}
	if !lowCardinality {
		for i := range rows {
			var m map[string]any
			_ = json.Unmarshal([]byte(rows[i].in), &m)
			delete(rows[i].want, "lc")
			rows[i].in = strings.Replace(rows[i].in, `,"lc":`+jsonString(m["lc"].(string)), "", 1)
		}
	}
	return rows
}

func jsonString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSpace(buf.String())
}

// TestIngestRoundTrip sends rows of many types as a JSON object, a JSON array, NDJSON and gzip
// NDJSON on every store × queue backend and reads them back exactly; ?wait=committed answers 200
// only once the rows are readable.
func TestIngestRoundTrip(t *testing.T) {
	for _, bm := range backendMatrix {
		t.Run(bm.store+"/"+bm.mq, func(t *testing.T) {
			g := backendGateway(t, bm.store, bm.mq, func(c *gatewayConfig) {
				c.MaxRows, c.MaxBodyBytes = testMaxRows, testMaxBodyBytes
			})
			lc := bm.store == storeCHDB
			table := "types"
			g.sql(t, typesDDL(table, lc))
			rows := typedRows(lc)
			r := readerFor(g)

			// One JSON object, committed: readable right after the 200.
			resp := g.ingest(t, table, "wait=committed", ctJSON, []byte(rows[0].in))
			requireCommitted(t, resp, 1)
			if got := count(t, r, table); got != 1 {
				t.Fatalf("after wait=committed: %d rows in the table, want 1", got)
			}
			// A JSON array.
			resp = g.ingest(t, table, "wait=committed", ctJSON, []byte("["+rows[1].in+",\n"+rows[2].in+"]"))
			requireCommitted(t, resp, 2)
			// NDJSON under each accepted media type.
			resp = g.ingest(t, table, "wait=committed", ctNDJSON, []byte(rows[3].in+"\n"+rows[4].in+"\n"))
			requireCommitted(t, resp, 2)
			resp = g.ingest(t, table, "wait=committed", "application/jsonl", []byte(rows[5].in))
			requireCommitted(t, resp, 1)
			// zstd NDJSON, committed.
			zs := g.client.Do(t, http.MethodPost, "/v1/ingest/"+table+"?wait=committed", http.Header{"Content-Type": {ctNDJSON}, "Content-Encoding": {"zstd"}}, zstded(t, []byte(rows[7].in+"\n")))
			requireCommitted(t, zs, 1)
			// gzip NDJSON without wait: 202 with a sequence, then the row arrives.
			gz := g.client.Do(t, http.MethodPost, "/v1/ingest/"+table, http.Header{"Content-Type": {ctNDJSON}, "Content-Encoding": {"gzip"}}, gzipped([]byte(rows[6].in+"\n")))
			var acc struct {
				Accepted int    `json:"accepted"`
				Sequence string `json:"sequence"`
			}
			if gz.Status != http.StatusAccepted {
				t.Fatalf("gzip ingest: %s, want 202", gz)
			}
			gz.JSON(t, &acc)
			if acc.Accepted != 1 || acc.Sequence == "" {
				t.Fatalf("gzip ingest: %s, want accepted 1 and a sequence", gz)
			}
			poll.Until(t, 30*time.Second, "the gzip row", func() bool { return count(t, r, table) == len(rows) })

			// Every refused request enqueued nothing; the partial one only its valid rows.
			wantIDs := checkValidation(t, g, table, rows[2].in)
			ids := r.selectRows(t, "SELECT id FROM {table} ORDER BY id", table)
			for _, row := range rows {
				wantIDs = append(wantIDs, row.want["id"].(string))
			}
			sort.Strings(wantIDs)
			if fmt.Sprint(column(ids, "id")) != fmt.Sprint(wantIDs) {
				t.Fatalf("ids in the table %v, want %v", column(ids, "id"), wantIDs)
			}

			got := r.selectRows(t, strings.Replace(typesSelect(lc), "ORDER BY", "WHERE id LIKE 'r%' ORDER BY", 1), table)
			if len(got) != len(rows) {
				t.Fatalf("read %d rows back, want %d: %v", len(got), len(rows), got)
			}
			for i, want := range rows {
				for col, v := range want.want {
					if got[i][col] != v {
						t.Errorf("row %s column %s = %#v, want %#v", want.want["id"], col, got[i][col], v)
					}
				}
				if len(got[i]) != len(want.want) {
					t.Errorf("row %s has %d columns, want %d", want.want["id"], len(got[i]), len(want.want))
				}
			}
		})
	}
}

// column returns one column of rows, as strings.
func column(rows []map[string]any, name string) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		out = append(out, fmt.Sprint(r[name]))
	}
	return out
}

// requireCommitted checks a 200 answer to ?wait=committed with n accepted rows.
func requireCommitted(t *testing.T, resp gatewaybin.Response, n int) {
	t.Helper()
	var body struct {
		Accepted  int    `json:"accepted"`
		Sequence  string `json:"sequence"`
		Committed *bool  `json:"committed"`
	}
	if resp.Status != http.StatusOK {
		t.Fatalf("wait=committed: %s, want 200", resp)
	}
	resp.JSON(t, &body)
	if body.Accepted != n || body.Committed == nil || !*body.Committed || body.Sequence == "" {
		t.Fatalf("wait=committed: %s, want accepted %d, committed true and a sequence", resp, n)
	}
}
