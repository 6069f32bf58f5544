package query

import (
	"net/http"
	"strings"
	"testing"
)

// discardWriter is a ResponseWriter that keeps nothing, so the benchmark measures the service.
type discardWriter struct {
	h    http.Header
	code int
	n    int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(code int)        { d.code = code }
func (d *discardWriter) Write(b []byte) (int, error) { d.n += len(b); return len(b), nil }

// BenchmarkServeHTTPHit measures the service's part of a cache hit of /v1/query, without the
// network and the HTTP server: body read, decode, statement check, table scan, versions, key,
// lookup and response headers.
func BenchmarkServeHTTPHit(b *testing.B) {
	f := newFixture(b, nil)
	const body = `{"sql":"SELECT user, count() AS n FROM events GROUP BY user ORDER BY user"}`
	req, _ := http.NewRequest(http.MethodPost, "/v1/query", nil)
	w := &discardWriter{h: http.Header{}}
	f.svc.ServeHTTP(w, withBody(req, body), f.target.Tenant, f.target) // fill
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		clear(w.h)
		f.svc.ServeHTTP(w, withBody(req, body), f.target.Tenant, f.target)
		if w.code != 200 || w.h.Get("X-Cache") != "HIT" {
			b.Fatalf("status %d X-Cache %q", w.code, w.h.Get("X-Cache"))
		}
	}
}

// withBody sets r's body to s (a strings.Reader in a NopCloser, as an allocation the HTTP
// server would also make).
func withBody(r *http.Request, s string) *http.Request {
	r.Body = nopCloser{strings.NewReader(s)}
	return r
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }
