// Package ops serves the operator listener: liveness and readiness probes, Prometheus metrics,
// the build version and pprof. It is a separate listener from the API, loopback by default, so
// profiles and internals are never exposed where clients connect.
package ops

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wavehouse/wavehouse/internal/buildinfo"
)

// Readiness tracks whether the process can serve: every component it runs must have reported
// up, and shutdown has not begun. It is safe for concurrent use.
type Readiness struct {
	mu       sync.Mutex
	pending  map[string]bool
	draining bool
	started  bool
}

// NewReadiness returns a Readiness that waits for the named components.
func NewReadiness(components ...string) *Readiness {
	r := &Readiness{pending: map[string]bool{}}
	for _, c := range components {
		r.pending[c] = true
	}
	return r
}

// Up marks a component as ready.
func (r *Readiness) Up(component string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, component)
}

// Started marks the end of boot: readiness can turn true once every component is up.
func (r *Readiness) Started() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = true
}

// Drain turns readiness false for good: the process is shutting down.
func (r *Readiness) Drain() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.draining = true
}

// Status reports readiness and, when not ready, why.
func (r *Readiness) Status() (ready bool, reasons []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.draining {
		return false, []string{"shutting down"}
	}
	for c := range r.pending {
		reasons = append(reasons, c+" not up")
	}
	sort.Strings(reasons)
	if !r.started {
		reasons = append(reasons, "starting")
	}
	return len(reasons) == 0, reasons
}

// NewRegistry returns a private metrics registry with the Go runtime and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Options are what the ops handler serves.
type Options struct {
	Readiness *Readiness
	Gatherer  prometheus.Gatherer
	Pprof     bool
}

// Handler returns the ops listener's routes.
func Handler(o Options) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ready, reasons := o.Readiness.Status()
		status := http.StatusOK
		if !ready {
			status = http.StatusServiceUnavailable
		}
		writeJSON(w, status, map[string]any{"ready": ready, "reasons": reasons})
	})
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, buildinfo.Get())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{}))
	if o.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
