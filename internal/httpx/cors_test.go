package httpx

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestCORS(t *testing.T) {
	policy := func(origin string) (CORSRule, bool) {
		return CORSRule{Methods: []string{"GET", "POST"}, Headers: []string{"Authorization", "Content-Type"}, MaxAge: 10 * time.Minute},
			origin == "https://app.test"
	}
	reached := 0
	h := CORS(policy, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++; w.WriteHeader(http.StatusUnauthorized) }))
	do := func(method, origin, reqMethod string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/v1/query", nil)
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if reqMethod != "" {
			r.Header.Set("Access-Control-Request-Method", reqMethod)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	// An allowed preflight is answered here, before the (authenticating) handler.
	w := do("OPTIONS", "https://app.test", "POST")
	if w.Code != http.StatusNoContent || reached != 0 || w.Header().Get("Access-Control-Allow-Origin") != "https://app.test" ||
		w.Header().Get("Access-Control-Allow-Methods") != "GET, POST" || w.Header().Get("Access-Control-Allow-Headers") != "Authorization, Content-Type" ||
		w.Header().Get("Access-Control-Max-Age") != "600" || w.Header().Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("allowed preflight: %d reached=%d %v", w.Code, reached, w.Header())
	}
	for _, c := range []struct{ origin, method string }{{"https://evil.test", "POST"}, {"https://app.test", "DELETE"}} {
		w := do("OPTIONS", c.origin, c.method)
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "cors.origin_not_allowed") || reached != 0 {
			t.Errorf("preflight %s %s: %d %s", c.origin, c.method, w.Code, w.Body)
		}
		for k := range w.Header() {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("refused preflight %s %s carries %s", c.origin, c.method, k)
			}
		}
	}
	// An actual request from an allowed origin can read the answer (even an error); from another, not.
	if w := do("POST", "https://app.test", ""); reached != 1 || w.Header().Get("Access-Control-Allow-Origin") != "https://app.test" ||
		!strings.Contains(w.Header().Get("Access-Control-Expose-Headers"), "X-Request-Id") || w.Header().Get("Vary") != "Origin" {
		t.Errorf("allowed actual request: %v", w.Header())
	}
	if w := do("POST", "https://evil.test", ""); reached != 2 || w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("disallowed actual request: %v", w.Header())
	}
	// Without Origin nothing changes: OPTIONS goes to the routes (404/405 there).
	if w := do("OPTIONS", "", ""); reached != 3 || len(w.Header()) != 0 {
		t.Errorf("OPTIONS without Origin: reached=%d %v", reached, w.Header())
	}
}
