package api

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"go.opentelemetry.io/otel/trace"

	"github.com/wavehouse/wavehouse/internal/tracing"
)

// requestTraceparent is the trace context the request's rows carry in the queue headers: the
// request's server span when tracing is on (so the insert span can link to it), else the
// client's traceparent or a new one.
func requestTraceparent(r *http.Request) string {
	if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
		return tracing.Traceparent(sc)
	}
	return traceparent(r.Header.Get("traceparent"))
}

// traceparent returns the request's W3C traceparent when it is well-formed, else a new one, so
// every accepted record can be followed from HTTP to the insert.
func traceparent(h string) string {
	if validTraceparent(h) {
		return h
	}
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "00-" + hex.EncodeToString(b[:16]) + "-" + hex.EncodeToString(b[16:]) + "-01"
}

// validTraceparent checks the version-00 layout: 00-<32 hex>-<16 hex>-<2 hex>, ids not all zero.
func validTraceparent(s string) bool {
	if len(s) != 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return false
	}
	for i, c := range []byte(s) {
		if i == 2 || i == 35 || i == 52 {
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s[3:35] != "00000000000000000000000000000000" && s[36:52] != "0000000000000000"
}
