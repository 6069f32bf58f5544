package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pierrec/lz4/v4"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// chInsert posts an INSERT to the gateway's ClickHouse interface as the official clients do:
// the statement in ?query=, the rows as the body, Basic credentials (user default, no password:
// this gateway runs anonymous on loopback).
func (g *gateway) chInsert(t *testing.T, query string, body []byte, hdr ...string) gatewaybin.Response {
	t.Helper()
	h := http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("default:"))}}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	return g.client.Do(t, http.MethodPost, "/?wait=committed&query="+url.QueryEscape(query), h, body)
}

// TestClickHouseInterfaceEndToEnd drives the built binary over a ClickHouse 18.16 server: an
// INSERT in each kind of format (JSON, compact JSON, CSV, TSV, RowBinary, Native, an lz4 body,
// the statement in the body) lands its rows in ClickHouse exactly once, answered 200 with an
// empty body and X-ClickHouse-Summary; a bad row is refused in ClickHouse's error form and
// nothing of its request lands; /ping answers Ok.
func TestClickHouseInterfaceEndToEnd(t *testing.T) {
	g := backendGateway(t, storeClickHouse, mqEmbedded, nil)
	r := readerFor(g)
	g.sql(t, "CREATE TABLE chi (id UInt64, name String, n UInt8 DEFAULT 7) ENGINE = MergeTree ORDER BY id")

	rb := func(id uint64, name string) []byte {
		b := binary.LittleEndian.AppendUint64(nil, id)
		return append(binary.AppendUvarint(b, uint64(len(name))), name...)
	}
	native := func(id uint64, name string) []byte {
		str := func(b []byte, s string) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }
		b := binary.AppendUvarint(nil, 2)
		b = binary.AppendUvarint(b, 1)
		b = binary.LittleEndian.AppendUint64(str(str(b, "id"), "UInt64"), id)
		return str(str(str(b, "name"), "String"), name)
	}
	var lz bytes.Buffer
	w := lz4.NewWriter(&lz)
	_, _ = w.Write([]byte(`{"id":9,"name":"lz4"}`))
	_ = w.Close()

	cases := []struct {
		query string
		body  []byte
		hdr   []string
	}{
		{"INSERT INTO chi FORMAT JSONEachRow", []byte(`{"id":1,"name":"json"}` + "\n"), nil},
		{"INSERT INTO chi (id, name) FORMAT JSONCompactEachRow", []byte(`[2,"compact"]`), nil},
		{"INSERT INTO chi (id, name) FORMAT CSV", []byte("3,csv\n"), nil},
		{"INSERT INTO default.chi FORMAT TSVWithNames", []byte("name\tid\ntsv\t4\n"), nil},
		{"INSERT INTO chi (id, name) FORMAT RowBinary", rb(5, "rowbinary"), nil},
		{"INSERT INTO chi FORMAT Native", native(6, "native"), nil},
		{"INSERT INTO chi FORMAT JSONEachRow", lz.Bytes(), []string{"Content-Encoding", "lz4"}},
	}
	for _, c := range cases {
		resp := g.chInsert(t, c.query, c.body, c.hdr...)
		if resp.Status != http.StatusOK || len(resp.Body) != 0 || !strings.Contains(resp.Header.Get("X-ClickHouse-Summary"), `"written_rows":"1"`) ||
			resp.Header.Get("X-Wavehouse-Committed") != "true" {
			t.Fatalf("%s: %s %v", c.query, resp, resp.Header)
		}
	}
	// The statement in the body, as the Node client sends queries.
	resp := g.client.Do(t, http.MethodPost, "/?wait=committed", nil, []byte("INSERT INTO chi FORMAT JSONEachRow\n{\"id\":10,\"name\":\"body\"}"))
	if resp.Status != http.StatusOK {
		t.Fatalf("statement in the body: %s", resp)
	}
	// One bad row refuses its whole request, ClickHouse-style.
	resp = g.chInsert(t, "INSERT INTO chi FORMAT JSONEachRow", []byte(`{"id":11,"name":"ok"}`+"\n"+`{"id":12,"name":"bad","n":300}`))
	if resp.Status != http.StatusBadRequest || resp.Header.Get("X-ClickHouse-Exception-Code") != "27" || resp.Header.Get("X-Wavehouse-Error-Code") != "ingest.invalid_rows" ||
		!strings.HasPrefix(string(resp.Body), "Code: 27. DB::Exception: Cannot parse input: column \"n\" (UInt8)") || !strings.Contains(string(resp.Body), "(at row 2)") {
		t.Fatalf("bad row: %s %v", resp, resp.Header)
	}
	got := r.selectRows(t, "SELECT concat(toString(id), ':', name, ':', toString(n)) AS r FROM {table} ORDER BY id", "chi")
	want := []string{"1:json:7", "2:compact:7", "3:csv:7", "4:tsv:7", "5:rowbinary:7", "6:native:7", "9:lz4:7", "10:body:7"}
	if len(got) != len(want) {
		t.Fatalf("ClickHouse holds %v, want %v", got, want)
	}
	for i, row := range got {
		if row["r"] != any(want[i]) {
			t.Fatalf("ClickHouse holds %v, want %v", got, want)
		}
	}
	if resp := g.client.Do(t, http.MethodGet, "/ping", nil, nil); resp.Status != http.StatusOK || string(resp.Body) != "Ok.\n" {
		t.Fatalf("/ping: %s", resp)
	}
}
