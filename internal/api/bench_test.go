package api

import (
	"net/http"
	"testing"
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
