package httpx

import (
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// UnmatchedRoute is the route label of a request no registered pattern matched (404, 405, and
// CONNECT, whose redirects the mux derives from the request path): unknown paths share it, so a
// scan of random URLs adds no series.
const UnmatchedRoute = "unmatched"

// Metrics counts and times the requests of the listeners it instruments, by listener, method,
// route pattern and status class. Every label comes from a bounded set: the listener names the
// process passes, the standard methods (anything else is "other"), the patterns registered on
// the listener's mux (never the request path) and the five status classes.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics creates the instruments and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	labels := []string{"listener", "method", "route", "status_class"}
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_http_requests_total",
			Help: "HTTP requests answered, by listener (api, ops), method, route pattern (unmatched for unknown paths) and status class (2xx, 4xx, 5xx).",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wavehouse_http_request_duration_seconds",
			Help:    "Time from the request's arrival to its handler returning (an SSE stream: its whole life), by listener, method, route pattern and status class.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, labels),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Instrument wraps h, the handler of the listener named listener, with the request metrics. The
// route is the pattern the ServeMux set on the request (http.Request.Pattern), so h must serve
// the request it is given on a ServeMux without copying it: the mux itself or Routes(mux). Wrap
// Middleware around the result, not the other way round: Middleware copies the request.
func (m *Metrics) Instrument(listener string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		status := http.StatusInternalServerError // what a panicking handler amounts to
		defer func() {
			labels := []string{listener, methodLabel(r.Method), routeLabel(r), statusClass(status)}
			m.requests.WithLabelValues(labels...).Inc()
			m.duration.WithLabelValues(labels...).Observe(time.Since(start).Seconds())
		}()
		h.ServeHTTP(sw, r)
		status = sw.status()
	})
}

// routeLabel is the path part of the pattern the mux matched ("/v1/ingest/{table}"; the method
// has its own label), or UnmatchedRoute.
func routeLabel(r *http.Request) string {
	p := r.Pattern
	if p == "" || r.Method == http.MethodConnect {
		return UnmatchedRoute
	}
	if i := strings.IndexByte(p, ' '); i >= 0 {
		p = strings.TrimLeft(p[i+1:], " \t")
	}
	return p
}

// methodLabel keeps the standard methods and folds every other token into "other": the method is
// client data, and a mux pattern without a method accepts any.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// statusClass is "1xx" … "5xx".
func statusClass(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return string([]byte{byte('0' + code/100), 'x', 'x'})
}
