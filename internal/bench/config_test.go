package bench

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

func TestValidateReportsEveryProblemAndLoopbackOnly(t *testing.T) {
	err := Config{URL: "http://10.0.0.1:8080", Table: "bad-name", Clients: -1, Format: "csv",
		Direct: []Direct{{Kind: DirectHTTP, Addr: "example.com:8123"}}}.Validate()
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"url:", "table:", "clients:", "format:", "direct clickhouse-http:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	ok := Config{URL: "http://127.0.0.1:8080", Table: "t", ClickHouseHTTP: "localhost:8123",
		Direct: []Direct{{Kind: DirectNative, Addr: "[::1]:9000"}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
}

func TestParseDirect(t *testing.T) {
	d, err := ParseDirect("native=127.0.0.1:9000")
	if err != nil || d != (Direct{Kind: DirectNative, Addr: "127.0.0.1:9000"}) {
		t.Errorf("ParseDirect = %+v, %v", d, err)
	}
	for _, bad := range []string{"native", "grpc=127.0.0.1:1", "clickhouse-http="} {
		if _, err := ParseDirect(bad); err == nil {
			t.Errorf("ParseDirect(%q) accepted", bad)
		}
	}
}

func TestBodiesDecodeToTheGeneratedRows(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		format string
		gz     bool
	}{{FormatNDJSON, false}, {FormatJSON, false}, {FormatNDJSON, true}} {
		batches, err := genBatches(3, 20, tc.format, tc.gz, now)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[uint64]bool{}
		for _, b := range batches {
			body := b.Body
			if tc.gz {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			var objs []map[string]any
			if tc.format == FormatJSON {
				if err := json.Unmarshal(body, &objs); err != nil {
					t.Fatalf("json body: %v", err)
				}
			} else {
				sc := bufio.NewScanner(bytes.NewReader(body))
				for sc.Scan() {
					var o map[string]any
					if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
						t.Fatalf("ndjson line %q: %v", sc.Text(), err)
					}
					objs = append(objs, o)
				}
			}
			if len(objs) != len(b.Rows) {
				t.Fatalf("%s: %d objects for %d rows", tc.format, len(objs), len(b.Rows))
			}
			for i, o := range objs {
				r := b.Rows[i]
				if len(o) != len(Columns) || o["ts"] != r.TS.Format(time.DateTime) || o["user"] != r.User || o["value"] != r.Value {
					t.Errorf("object %v does not match row %+v", o, r)
				}
				if (r.Note == nil) != (o["note"] == nil) {
					t.Errorf("note of %v does not match %v", o, r.Note)
				}
				seen[r.ID] = true
			}
		}
		if len(seen) != 60 {
			t.Errorf("%s: %d distinct ids, want 60", tc.format, len(seen))
		}
	}
}

func TestInterfaces(t *testing.T) {
	got, err := ParseInterfaces("ingest, clickhouse")
	if err != nil || strings.Join(got, ",") != "ingest,clickhouse" {
		t.Errorf("ParseInterfaces = %q, %v", got, err)
	}
	for _, bad := range []string{"", "native", "ingest,ingest"} {
		if _, err := ParseInterfaces(bad); err == nil {
			t.Errorf("ParseInterfaces(%q) accepted", bad)
		}
	}
	err = Config{URL: "http://127.0.0.1:8080", Table: "t", Format: FormatJSON, WaitCommitted: true, Rounds: 101,
		Interfaces: []string{InterfaceClickHouse, "grpc"}}.Validate()
	for _, want := range []string{"format:", "wait-committed:", "rounds:", `interface: "grpc"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
