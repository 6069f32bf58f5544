package httpx

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// nameSpan names the request's server span (when tracing records one) after the route pattern
// that matched, "POST /v1/ingest/{table}", and sets http.route, so span names stay bounded
// whatever the paths. Requests no pattern matches keep the name the tracing middleware gave.
func nameSpan(r *http.Request, pattern string) {
	span := trace.SpanFromContext(r.Context())
	if !span.IsRecording() {
		return
	}
	route := pattern
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		route = pattern[i+1:]
	} else {
		pattern = r.Method + " " + pattern
	}
	span.SetName(pattern)
	span.SetAttributes(attribute.String("http.route", route))
}
