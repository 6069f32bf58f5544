package integration

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// Media types of ingest bodies.
const (
	ctJSON   = "application/json"
	ctNDJSON = "application/x-ndjson"
)

// ingest posts body to /v1/ingest/{table}?query with the given Content-Type.
func (g *gateway) ingest(t *testing.T, table, query, contentType string, body []byte) gatewaybin.Response {
	t.Helper()
	path := "/v1/ingest/" + table
	if query != "" {
		path += "?" + query
	}
	return g.client.Do(t, http.MethodPost, path, http.Header{"Content-Type": {contentType}}, body)
}

// sql runs operator SQL (DDL) through /v1/ops/sql with the operator key the gateway generated
// and requires success.
func (g *gateway) sql(t *testing.T, stmt string) {
	t.Helper()
	g.client.MustOpsSQL(t, g.operatorKey(t), gatewaybin.DefaultTenant, stmt)
}

// ops calls an operator route (/v1/ops/…) of the default tenant as the operator.
func (g *gateway) ops(t *testing.T, method, path string) gatewaybin.Response {
	t.Helper()
	return g.client.Ops(t, g.operatorKey(t), gatewaybin.DefaultTenant, method, path, nil)
}

// operatorKey is the operator key the gateway generated in its data_dir at first boot.
func (g *gateway) operatorKey(t *testing.T) string {
	t.Helper()
	return gatewaybin.OperatorKey(t, g.dataDir())
}

// query runs a SELECT through the gateway's /v1/query and returns its rows as objects.
func (g *gateway) query(t *testing.T, stmt string) []map[string]any {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"sql": stmt, "format": "ndjson"})
	r := g.client.Do(t, http.MethodPost, "/v1/query", http.Header{"Content-Type": {ctJSON}}, b)
	if r.Status != http.StatusOK {
		t.Fatalf("query %q: %s", stmt, r)
	}
	return decodeNDJSON(t, r.Body)
}

func decodeNDJSON(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var rows []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("decoding rows %q: %v", b, err)
		}
		rows = append(rows, m)
	}
	return rows
}

// rowReader reads rows back from where the gateway stored them.
type rowReader interface {
	// selectRows runs stmt, a SELECT whose FROM names the table as {table}, and returns the rows.
	selectRows(t *testing.T, stmt, table string) []map[string]any
}

// gatewayReader reads through the gateway's query endpoint (the only way into an embedded chDB).
type gatewayReader struct{ g *gateway }

func (r gatewayReader) selectRows(t *testing.T, stmt, table string) []map[string]any {
	t.Helper()
	return r.g.query(t, strings.ReplaceAll(stmt, "{table}", table))
}

// serverReader reads straight from a ClickHouse server over HTTP, bypassing the gateway.
type serverReader struct {
	ch *testsvc.ClickHouse
	db string
}

func (r serverReader) selectRows(t *testing.T, stmt, table string) []map[string]any {
	t.Helper()
	out, err := r.ch.Query(t.Context(), strings.ReplaceAll(stmt, "{table}", r.db+"."+table)+" FORMAT JSONEachRow")
	if err != nil {
		t.Fatalf("select from ClickHouse: %v", err)
	}
	return decodeNDJSON(t, []byte(out))
}

// readerFor returns the independent reader of a gateway's store.
func readerFor(g *gateway) rowReader {
	if g.cfg.Store == storeClickHouse {
		return serverReader{ch: &testsvc.ClickHouse{NativeAddr: g.cfg.CHAddr, HTTPAddr: g.cfg.CHHTTPAddr}, db: g.cfg.CHDatabase}
	}
	return gatewayReader{g}
}

// count returns count() of a table through r.
func count(t *testing.T, r rowReader, table string) int {
	t.Helper()
	rows := r.selectRows(t, "SELECT toString(count()) AS n FROM {table}", table)
	if len(rows) != 1 {
		t.Fatalf("count: %d rows", len(rows))
	}
	var n int
	fmt.Sscan(rows[0]["n"].(string), &n)
	return n
}

// jsonText re-encodes a decoded JSON value.
func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// zstded compresses b with zstd.
func zstded(t *testing.T, b []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

// gzipped compresses b.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}
