package idempotency

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

const ctNDJSON = "application/x-ndjson"

// replayed reports whether the answer carries Idempotent-Replayed: true.
func replayed(r gatewaybin.Response) bool { return r.Header.Get("Idempotent-Replayed") == "true" }

// ingest posts an NDJSON body to table, with an Idempotency-Key when key is not empty.
func (g *gateway) ingest(ctx context.Context, table, key, query string, body []byte) (gatewaybin.Response, error) {
	h := http.Header{"Content-Type": {ctNDJSON}}
	if key != "" {
		h.Set("Idempotency-Key", key)
	}
	path := "/v1/ingest/" + table
	if query != "" {
		path += "?" + query
	}
	return g.client.Try(ctx, http.MethodPost, path, h, body)
}

// sql runs operator SQL (DDL) through /v1/ops/sql with the operator key the gateway generated
// in its data_dir, and requires success.
func (g *gateway) sql(t testing.TB, stmt string) {
	t.Helper()
	g.client.MustOpsSQL(t, gatewaybin.OperatorKey(t, g.dataDir()), gatewaybin.DefaultTenant, stmt)
}

// selectRows runs stmt, whose FROM names the table as {table}, where the gateway stored the
// rows: straight on the ClickHouse server when there is one (bypassing the gateway), else
// through the gateway's /v1/query (the only way into an embedded chDB). Values come back as
// JSON strings or numbers.
func (g *gateway) selectRows(t testing.TB, stmt, table string) []map[string]any {
	t.Helper()
	var out []byte
	if g.cfg.CH != nil {
		s, err := g.cfg.CH.Query(t.Context(), strings.ReplaceAll(stmt, "{table}", g.cfg.CHDatabase+"."+table)+" FORMAT JSONEachRow")
		if err != nil {
			t.Fatalf("select from ClickHouse: %v", err)
		}
		out = []byte(s)
	} else {
		b, _ := json.Marshal(map[string]string{"sql": strings.ReplaceAll(stmt, "{table}", table), "format": "ndjson"})
		r := g.client.Do(t, http.MethodPost, "/v1/query", http.Header{"Content-Type": {"application/json"}}, b)
		if r.Status != http.StatusOK {
			t.Fatalf("query %q: %s", stmt, r)
		}
		out = r.Body
	}
	var rows []map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("decoding rows %q: %v", out, err)
		}
		rows = append(rows, m)
	}
	return rows
}

// notMarker excludes the rows settled adds from every count.
const notMarker = "id NOT LIKE 'marker-%'"

// rowStats is what a table holds: its row count, distinct ids, and every id stored more than
// once with its count.
type rowStats struct {
	Total, Distinct int
	Repeated        map[string]int
}

// stats reads rowStats of table (column id String), leaving out marker rows.
func (g *gateway) stats(t testing.TB, table string) rowStats {
	t.Helper()
	rows := g.selectRows(t, "SELECT toString(count()) AS total, toString(uniqExact(id)) AS uniq FROM {table} WHERE "+notMarker, table)
	if len(rows) != 1 {
		t.Fatalf("stats of %s: %d rows", table, len(rows))
	}
	s := rowStats{Total: atoi(t, rows[0]["total"]), Distinct: atoi(t, rows[0]["uniq"]), Repeated: map[string]int{}}
	if s.Total != s.Distinct {
		for _, r := range g.selectRows(t, "SELECT id, toString(count()) AS c FROM {table} WHERE "+notMarker+" GROUP BY id HAVING count() > 1", table) {
			s.Repeated[fmt.Sprint(r["id"])] = atoi(t, r["c"])
		}
	}
	return s
}

// ids returns the set of ids stored in table.
func (g *gateway) ids(t testing.TB, table string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, r := range g.selectRows(t, "SELECT DISTINCT id FROM {table} WHERE "+notMarker, table) {
		out[fmt.Sprint(r["id"])] = true
	}
	return out
}

func atoi(t testing.TB, v any) int {
	t.Helper()
	n, err := strconv.Atoi(fmt.Sprint(v))
	if err != nil {
		t.Fatalf("not an integer: %v", v)
	}
	return n
}

// settled waits until table holds at least want distinct ids and then until a marker request,
// sent after everything else with ?wait=committed, is in ClickHouse, so that whatever the
// earlier requests enqueued has had its chance to land before the caller counts rows.
func (g *gateway) settled(t testing.TB, table string, want int) {
	t.Helper()
	poll.Until(t, 120*time.Second, fmt.Sprintf("%d distinct ids in %s", want, table), func() bool {
		return g.stats(t, table).Distinct >= want
	})
	marker := fmt.Sprintf("{\"id\":\"marker-%d\",\"n\":0}\n", time.Now().UnixNano())
	poll.Until(t, 60*time.Second, "the marker row committed", func() bool {
		r, err := g.ingest(t.Context(), table, "", "wait=committed", []byte(marker))
		return err == nil && r.Status == http.StatusOK
	})
}
