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
	"github.com/wavehouse/wavehouse/internal/httpx"
)

// Readiness tracks whether the process can serve: every component it runs must have reported
// up, and shutdown has not begun. Separately it records dependencies that are degraded: a
// process whose store is unreachable still accepts rows into the durable queue, so it stays
// ready and says what is degraded. It is safe for concurrent use.
type Readiness struct {
	mu       sync.Mutex
	pending  map[string]bool
	degraded map[string]string
	draining bool
	started  bool
}

// NewReadiness returns a Readiness that waits for the named components.
func NewReadiness(components ...string) *Readiness {
	r := &Readiness{pending: map[string]bool{}, degraded: map[string]string{}}
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

// Degrade records that dependency cannot be used now, and why ("unavailable: …").
func (r *Readiness) Degrade(dependency, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.degraded[dependency] = reason
}

// Restore records that dependency can be used again.
func (r *Readiness) Restore(dependency string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.degraded, dependency)
}

// Degraded returns the degraded dependencies and why; nil when none is.
func (r *Readiness) Degraded() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.degraded) == 0 {
		return nil
	}
	out := make(map[string]string, len(r.degraded))
	for k, v := range r.degraded {
		out[k] = v
	}
	return out
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

// Handler returns the ops listener's routes; an unknown path answers 404 and a wrong method 405
// with Allow, both as JSON errors.
func Handler(o Options) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		writeReadyz(w, o.Readiness)
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
	return httpx.Routes(mux)
}

// readyzBody is the /readyz answer. Status is "ok", "degraded" (ready: the process accepts into
// the durable queue, but a dependency named in Degraded is unreachable) or "not_ready".
type readyzBody struct {
	Ready    bool              `json:"ready"`
	Status   string            `json:"status"`
	Reasons  []string          `json:"reasons"`
	Degraded map[string]string `json:"degraded,omitempty"`
}

// writeReadyz answers 200 while ready, degraded or not, and 503 while starting or draining: a
// degraded api still accepts rows durably, so a load balancer should keep sending them.
func writeReadyz(w http.ResponseWriter, r *Readiness) {
	ready, reasons := r.Status()
	body := readyzBody{Ready: ready, Status: "ok", Reasons: reasons, Degraded: r.Degraded()}
	if body.Reasons == nil {
		body.Reasons = []string{}
	}
	status := http.StatusOK
	switch {
	case !ready:
		status, body.Status = http.StatusServiceUnavailable, "not_ready"
	case len(body.Degraded) > 0:
		body.Status = "degraded"
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
