package httpx

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/testutil/metrictest"
)

// TestInstrumentLabelsByPatternNotPath: requests are counted under the mux pattern they matched
// (never the raw path), unknown paths and wrong methods share the unmatched route, a method
// outside the standard set is "other", and a panicking handler counts as 5xx — through the same
// composition the listeners use (Middleware around Instrument around Routes).
func TestInstrumentLabelsByPatternNotPath(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/ingest/{table}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	mux.HandleFunc("GET /x", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/any", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /boom", func(http.ResponseWriter, *http.Request) { panic("boom") })
	h := Middleware(slog.New(slog.DiscardHandler), m.Instrument("api", Routes(mux)))
	for _, rq := range []struct{ method, path string }{
		{"POST", "/v1/ingest/a"}, {"POST", "/v1/ingest/b"}, {"POST", "/v1/ingest/c%2Fd"},
		{"GET", "/x"}, {"HEAD", "/x"},
		{"GET", "/nope/1"}, {"GET", "/nope/2"}, {"DELETE", "/x"},
		{"FOO", "/any"}, {"GET", "/boom"},
	} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(rq.method, rq.path, nil))
	}
	want := []struct {
		method, route, class string
		n                    float64
	}{
		{"POST", "/v1/ingest/{table}", "2xx", 3},
		{"GET", "/x", "2xx", 1},
		{"HEAD", "/x", "2xx", 1},
		{"GET", UnmatchedRoute, "4xx", 2},
		{"DELETE", UnmatchedRoute, "4xx", 1},
		{"other", "/any", "2xx", 1},
		{"GET", "/boom", "5xx", 1},
	}
	var total float64
	for _, w := range want {
		labels := map[string]string{"listener": "api", "method": w.method, "route": w.route, "status_class": w.class}
		if got := metrictest.Value(t, reg, "wavehouse_http_requests_total", labels); got != w.n {
			t.Errorf("wavehouse_http_requests_total%v = %v, want %v", labels, got, w.n)
		}
		total += w.n
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "wavehouse_http_requests_total" && len(mf.GetMetric()) != len(want) {
			t.Errorf("%d request series, want %d (one per pattern, method and class): %v", len(mf.GetMetric()), len(want), mf.GetMetric())
		}
		if mf.GetName() == "wavehouse_http_request_duration_seconds" {
			var n uint64
			for _, s := range mf.GetMetric() {
				n += s.GetHistogram().GetSampleCount()
			}
			if float64(n) != total {
				t.Errorf("duration samples %d, want %v", n, total)
			}
		}
	}
}

func TestStatusClassAndMethodLabels(t *testing.T) {
	for code, want := range map[int]string{101: "1xx", 200: "2xx", 307: "3xx", 429: "4xx", 503: "5xx", 99: "other", 600: "other"} {
		if got := statusClass(code); got != want {
			t.Errorf("statusClass(%d) = %q, want %q", code, got, want)
		}
	}
	for in, want := range map[string]string{"GET": "GET", "PATCH": "PATCH", "get": "other", "PROPFIND": "other"} {
		if got := methodLabel(in); got != want {
			t.Errorf("methodLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
