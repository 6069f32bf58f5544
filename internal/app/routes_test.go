package app

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/auth"
)

// probeMethods are the methods tried on every route.
var probeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// wildcard is a {name} segment of a ServeMux pattern.
var wildcard = regexp.MustCompile(`\{[^}]+\}`)

// allowedByPath groups ServeMux patterns ("METHOD /path") by concrete path ({x} → "events") with
// the methods the path accepts; a GET pattern also accepts HEAD, as ServeMux serves it.
func allowedByPath(patterns []string) map[string][]string {
	out := map[string][]string{}
	for _, p := range patterns {
		method, path, _ := strings.Cut(p, " ")
		path = wildcard.ReplaceAllString(strings.TrimSuffix(path, "{$}"), "events")
		out[path] = append(out[path], method)
		if method == http.MethodGet {
			out[path] = append(out[path], http.MethodHead)
		}
	}
	return out
}

// checkMethods calls every path with every probe method and requires a route's own methods to
// reach it (not 404/405) and every other method to get 405 http.method_not_allowed with an Allow
// header naming exactly the path's methods; unknown paths get 404 not_found.
func checkMethods(t *testing.T, base string, byPath map[string][]string, unknown []string) {
	t.Helper()
	if len(byPath) == 0 {
		t.Fatal("no routes to walk")
	}
	for path, allowed := range byPath {
		for _, m := range probeMethods {
			r := call(t, m, base+path, "application/json", "")
			if slices.Contains(allowed, m) {
				if r.code == http.StatusNotFound || r.code == http.StatusMethodNotAllowed {
					t.Errorf("%s %s = %d %s: the route is not served", m, path, r.code, r.raw)
				}
				continue
			}
			var got []string
			for _, a := range strings.Split(r.header.Get("Allow"), ",") {
				if a = strings.TrimSpace(a); a != "" {
					got = append(got, a)
				}
			}
			slices.Sort(got)
			want := slices.Clone(allowed)
			slices.Sort(want)
			if r.code != http.StatusMethodNotAllowed || !slices.Equal(got, want) || r.header.Get("Content-Type") != "application/json" {
				t.Errorf("%s %s = %d Allow %q Content-Type %q, want 405 with Allow %q as JSON", m, path, r.code, r.header.Get("Allow"), r.header.Get("Content-Type"), want)
				continue
			}
			if m != http.MethodHead && (r.body["code"] != "http.method_not_allowed" || r.body["retryable"] != false) {
				t.Errorf("%s %s body %s, want the JSON error http.method_not_allowed", m, path, r.raw)
			}
		}
	}
	for _, path := range unknown {
		for _, m := range probeMethods {
			r := call(t, m, base+path, "application/json", "")
			if r.code != http.StatusNotFound || r.header.Get("Allow") != "" || (m != http.MethodHead && r.body["code"] != "not_found") {
				t.Errorf("%s %s (unknown) = %d Allow %q %s, want 404 not_found", m, path, r.code, r.header.Get("Allow"), r.raw)
			}
		}
	}
}

// TestWrongMethodIs405WithAllowOnEveryRoute walks every route of auth.Routes() on the real API
// listener (all-embedded process, a tenant so that no call is anonymous) and every route of the
// ops listener.
func TestWrongMethodIs405WithAllowOnEveryRoute(t *testing.T) {
	cfg := testConfig(t)
	cfg.SettingsDir = t.TempDir()
	writeTenant(t, cfg.SettingsDir, "acme", "acme_db", newTenantKey(t), "")
	a := startApp(t, cfg)

	var patterns []string
	for p := range auth.Routes() {
		patterns = append(patterns, p)
	}
	checkMethods(t, "http://"+a.APIAddr(), allowedByPath(patterns), []string{"/v1", "/v1/nope", "/v1/query/x", "/v1/ops/nope", "/livez"})

	ops := allowedByPath([]string{"GET /livez", "GET /readyz", "GET /version", "GET /metrics"})
	checkMethods(t, "http://"+a.OpsAddr(), ops, []string{"/", "/nope", "/v1/query"})
}
