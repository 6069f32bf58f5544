package httpx

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/logging"
)

func TestWriteErrorShapeAndRetryAfter(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteError(rec, Error{Status: 503, Code: "x.down", Message: "down", Retryable: true, RetryAfter: 1500 * time.Millisecond, Details: map[string]int{"n": 1}})
	var e map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "2" || e["code"] != "x.down" || e["error"] != "down" || e["retryable"] != true || e["details"] == nil {
		t.Fatalf("%d %v %v", rec.Code, rec.Header(), e)
	}
}

func TestMiddlewareRequestIDAndLogLine(t *testing.T) {
	var logs bytes.Buffer
	log, _ := logging.New(&logs, logging.Options{Level: "debug", Format: "json"})
	var seen string
	h := Middleware(log, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = logging.RequestID(r.Context())
		w.WriteHeader(204)
	}))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/x", nil)
	req.Header.Set(RequestIDHeader, "client-id-1")
	h.ServeHTTP(rec, req)
	if seen != "client-id-1" || rec.Header().Get(RequestIDHeader) != "client-id-1" {
		t.Fatalf("sane client id not kept: ctx %q header %q", seen, rec.Header().Get(RequestIDHeader))
	}
	if !strings.Contains(logs.String(), `"request_id":"client-id-1"`) || !strings.Contains(logs.String(), `"status":204`) {
		t.Fatalf("access log lacks id or status: %s", logs.String())
	}
	rec = httptest.NewRecorder()
	req = httptest.NewRequest("GET", "/x", nil)
	req.Header.Set(RequestIDHeader, "bad id\nforged")
	h.ServeHTTP(rec, req)
	if got := rec.Header().Get(RequestIDHeader); got == "" || strings.ContainsAny(got, " \n") || len(got) != 16 {
		t.Fatalf("unsafe client id not replaced: %q", got)
	}
}

func TestMiddlewareRecoversPanicWithJSON500(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	h := Middleware(log, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"code":"internal"`) {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

func TestNotFoundIsJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	NotFound(rec, httptest.NewRequest("DELETE", "/nope", nil))
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), "DELETE /nope") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// TestAccessLogLevels logs successes and 429s at debug, other 4xx at info and 5xx at warn.
func TestAccessLogLevels(t *testing.T) {
	for _, c := range []struct {
		status int
		level  string
	}{{200, "DEBUG"}, {429, "DEBUG"}, {404, "INFO"}, {503, "WARN"}} {
		var logs bytes.Buffer
		log, _ := logging.New(&logs, logging.Options{Level: "debug", Format: "json"})
		h := Middleware(log, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(c.status) }))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil))
		if !strings.Contains(logs.String(), `"level":"`+c.level+`"`) {
			t.Errorf("status %d: want level %s: %s", c.status, c.level, logs.String())
		}
	}
}
