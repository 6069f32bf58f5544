package ops

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestReadinessWaitsForEveryComponentAndDrains(t *testing.T) {
	r := NewReadiness("store", "mq")
	if ok, why := r.Status(); ok || len(why) != 3 {
		t.Fatalf("fresh: ready=%v reasons=%v", ok, why)
	}
	r.Up("store")
	r.Up("mq")
	if ok, why := r.Status(); ok || len(why) != 1 || why[0] != "starting" {
		t.Fatalf("before Started: ready=%v reasons=%v", ok, why)
	}
	r.Started()
	if ok, _ := r.Status(); !ok {
		t.Fatal("not ready with every component up")
	}
	r.Drain()
	if ok, why := r.Status(); ok || why[0] != "shutting down" {
		t.Fatalf("draining: ready=%v reasons=%v", ok, why)
	}
}

func serve(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func TestHandlerRoutes(t *testing.T) {
	r := NewReadiness("x")
	h := Handler(Options{Readiness: r, Gatherer: NewRegistry(), Pprof: false})
	if rec := serve(t, h, "/livez"); rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != "ok" {
		t.Fatalf("/livez %d %q", rec.Code, rec.Body)
	}
	rec := serve(t, h, "/readyz")
	var body struct {
		Ready   bool     `json:"ready"`
		Reasons []string `json:"reasons"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != 503 || body.Ready || len(body.Reasons) == 0 {
		t.Fatalf("/readyz while starting: %d %s", rec.Code, rec.Body)
	}
	r.Up("x")
	r.Started()
	if rec := serve(t, h, "/readyz"); rec.Code != 200 {
		t.Fatalf("/readyz when up: %d", rec.Code)
	}
	if rec := serve(t, h, "/version"); rec.Code != 200 || !strings.Contains(rec.Body.String(), "go_version") {
		t.Fatalf("/version %d %s", rec.Code, rec.Body)
	}
	if rec := serve(t, h, "/metrics"); rec.Code != 200 || !strings.Contains(rec.Body.String(), "go_goroutines") {
		t.Fatalf("/metrics %d", rec.Code)
	}
	if rec := serve(t, h, "/debug/pprof/"); rec.Code != 404 {
		t.Fatalf("pprof served with ops.pprof off: %d", rec.Code)
	}
	h = Handler(Options{Readiness: r, Gatherer: NewRegistry(), Pprof: true})
	if rec := serve(t, h, "/debug/pprof/"); rec.Code != 200 {
		t.Fatalf("pprof not served with ops.pprof on: %d", rec.Code)
	}
}

// TestReadyzReportsDegradedDependencies: a degraded dependency keeps the process ready (200) and
// is named with its reason; restoring it returns to "ok"; not ready is 503 whatever is degraded.
func TestReadyzReportsDegradedDependencies(t *testing.T) {
	r := NewReadiness("x")
	h := Handler(Options{Readiness: r, Gatherer: NewRegistry()})
	type body struct {
		Ready    bool              `json:"ready"`
		Status   string            `json:"status"`
		Degraded map[string]string `json:"degraded"`
	}
	read := func() (int, body) {
		rec := serve(t, h, "/readyz")
		var b body
		if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
			t.Fatalf("/readyz body %q: %v", rec.Body, err)
		}
		return rec.Code, b
	}
	r.Degrade("store", "unavailable: connection refused")
	if code, b := read(); code != 503 || b.Status != "not_ready" || b.Degraded["store"] == "" {
		t.Fatalf("degraded while starting: %d %+v", code, b)
	}
	r.Up("x")
	r.Started()
	if code, b := read(); code != 200 || !b.Ready || b.Status != "degraded" || b.Degraded["store"] != "unavailable: connection refused" {
		t.Fatalf("degraded when up: %d %+v", code, b)
	}
	r.Restore("store")
	if code, b := read(); code != 200 || b.Status != "ok" || len(b.Degraded) != 0 {
		t.Fatalf("restored: %d %+v", code, b)
	}
	r.Degrade("store", "unavailable: x")
	r.Drain()
	if code, b := read(); code != 503 || b.Status != "not_ready" {
		t.Fatalf("draining: %d %+v", code, b)
	}
}
