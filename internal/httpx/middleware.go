package httpx

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/wavehouse/wavehouse/internal/logging"
)

// RequestIDHeader carries the request id in both directions.
const RequestIDHeader = "X-Request-Id"

// NewRequestID returns 16 random hex characters.
func NewRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	var h [16]byte
	hex.Encode(h[:], b[:])
	return string(h[:])
}

// validRequestID accepts a client's id only when it is short and printable, so logs cannot be
// forged or flooded through it.
func validRequestID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Middleware wraps h with request-id propagation, an access log line per request, and panic
// recovery that answers 500 with a JSON error instead of dropping the connection.
func Middleware(log *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID(id) {
			id = NewRequestID()
		}
		w.Header()[RequestIDHeader] = []string{id} // canonical already; Set would re-canonicalise
		ctx := logging.WithRequestID(r.Context(), id)
		r = r.WithContext(ctx)
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.ErrorContext(ctx, "handler panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if !sw.wrote {
					WriteError(sw, Error{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error"})
				}
			}
			// Successful requests log at debug: at thousands of requests per second an info line each
			// would cost a write per request; failures always log. A 429 is flow control, not a
			// failure, and arrives by the thousand exactly when the process is busiest, so it logs
			// at debug too (metrics count it). The attributes are only built when the line is
			// written.
			level := slog.LevelDebug
			switch status := sw.status(); {
			case status >= 500:
				level = slog.LevelWarn
			case status >= 400 && status != http.StatusTooManyRequests:
				level = slog.LevelInfo
			}
			if log.Enabled(ctx, level) {
				log.LogAttrs(ctx, level, "http request", slog.String("method", r.Method), slog.String("path", r.URL.Path),
					slog.Int("status", sw.status()), slog.Int64("bytes", sw.bytes),
					slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000))
			}
		}()
		h.ServeHTTP(sw, r)
	})
}

type statusWriter struct {
	http.ResponseWriter
	code  int
	bytes int64
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.code, w.wrote = http.StatusOK, true
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) status() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.code
}

// Unwrap lets http.ResponseController reach Flush and deadlines of the real writer (SSE).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
