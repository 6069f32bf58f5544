package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
)

// BenchmarkIngestHandler is the whole ingest path of one small request as the API serves it
// (routing, authentication, limits, parsing, publish to the embedded queue, answer), with a
// client traceparent. With tracing off (the default, Deps.Tracer nil) it measures what the
// tracing hooks cost when off; compare with the same benchmark before they existed.
func BenchmarkIngestHandler(b *testing.B) {
	f := newFixture(b, options{noDedupe: true})
	body := row1 + "\n" + row2 + "\n"
	b.ReportAllocs()
	for b.Loop() {
		if r := f.ingest(b, f.all, "events", body, "traceparent", tp); r.status != http.StatusAccepted {
			b.Fatalf("ingest: %d %s", r.status, r.body)
		}
	}
}

// BenchmarkIngestInterfaces sends the same 1,000-row JSONEachRow body through /v1/ingest and
// through the ClickHouse interface's INSERT … FORMAT JSONEachRow, so that the two entry points'
// cost per request can be compared in one run (docs/benchmarks.md, W14).
func BenchmarkIngestInterfaces(b *testing.B) {
	// Nothing consumes the fixture's queue: lift its budgets so that b.N requests fit.
	f := newFixture(b, options{noDedupe: true, queue: func(c *embeddedmq.Config) { c.MaxBytes, c.TenantMaxBytes = -1, -1 }})
	var sb strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&sb, `{"ts":"2026-01-01 00:%02d:%02d","user":"user-%d","n":%d,"note":"a note of some length"}`+"\n", i/60%60, i%60, i, i%256)
	}
	body := sb.String()
	path := "/?query=" + url.QueryEscape("INSERT INTO events FORMAT JSONEachRow")
	b.Run("ingest", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if r := f.ingest(b, f.all, "events", body); r.status != http.StatusAccepted {
				b.Fatalf("ingest: %d %s", r.status, r.body)
			}
		}
	})
	b.Run("clickhouse", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if r := f.do(b, call{method: http.MethodPost, path: path, key: f.all, body: body}); r.status != http.StatusOK {
				b.Fatalf("clickhouse: %d %s", r.status, r.body)
			}
		}
	})
}
