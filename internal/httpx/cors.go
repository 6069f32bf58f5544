package httpx

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CORSRule is what the API allows a browser origin: the methods and request headers of a
// preflight and how long the browser may cache its answer.
type CORSRule struct {
	Methods []string
	Headers []string
	MaxAge  time.Duration
}

// corsExposed are the response headers a cross-origin page may read.
const corsExposed = "X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, X-Cache, WWW-Authenticate"

// CORS answers preflights (OPTIONS with Origin and Access-Control-Request-Method) before any
// authentication, and adds Access-Control-Allow-Origin to actual requests, for the origins
// policy allows. It always echoes the one origin, never "*", and never sends
// Access-Control-Allow-Credentials: the API takes its credential in the Authorization header
// or ?token=, never from a cookie. A preflight from an origin policy does not allow, or for a
// method it does not allow, gets 403 cors.origin_not_allowed with no Access-Control-* header.
func CORS(policy func(origin string) (CORSRule, bool), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		rule, ok := policy(origin)
		if reqMethod := r.Header.Get("Access-Control-Request-Method"); r.Method == http.MethodOptions && reqMethod != "" {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			if !ok || !slices.Contains(rule.Methods, reqMethod) {
				WriteError(w, Error{Status: http.StatusForbidden, Code: "cors.origin_not_allowed",
					Message: "origin " + origin + " may not call " + reqMethod + " " + r.URL.Path})
				return
			}
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Methods", strings.Join(rule.Methods, ", "))
			h.Set("Access-Control-Allow-Headers", strings.Join(rule.Headers, ", "))
			h.Set("Access-Control-Max-Age", strconv.Itoa(int(rule.MaxAge/time.Second)))
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if ok {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", corsExposed)
		}
		next.ServeHTTP(w, r)
	})
}
