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
