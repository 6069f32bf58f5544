package limits

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/httpx"
)

// WriteHeaders sets RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (seconds, rounded
// up) from d. It writes nothing when no limit applied.
func WriteHeaders(w http.ResponseWriter, d Decision) {
	if !d.Limited {
		return
	}
	h := w.Header()
	h.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
	h.Set("RateLimit-Reset", strconv.Itoa(ceilSeconds(d.Reset)))
}

// Reject answers a refused decision: 429 with code limits.<kind>, Retry-After and the RateLimit-*
// headers. A request that can never pass (more rows than the burst) is not retryable.
func Reject(w http.ResponseWriter, d Decision) {
	WriteHeaders(w, d)
	httpx.WriteError(w, RejectError(d))
}

// RejectError is the error Reject answers for a refused decision (without the RateLimit-*
// headers, which WriteHeaders sets), for a route that answers errors in another form.
func RejectError(d Decision) httpx.Error {
	e := httpx.Error{Status: http.StatusTooManyRequests, Code: "limits." + string(d.Kind), Retryable: !d.Never}
	switch {
	case d.Never:
		e.Message = fmt.Sprintf("the request needs more %s than the tenant's burst of %d allows: send smaller requests", d.Kind, d.Limit)
	case d.Kind == KindQueries:
		e.Message = fmt.Sprintf("the tenant already runs its maximum of %d concurrent queries", d.Limit)
		e.Limit, e.Value = "max_concurrent_queries", d.Limit
		e.RetryAfter = max(d.RetryAfter, time.Second)
	default:
		e.Message = fmt.Sprintf("over the tenant's %s rate limit", d.Kind)
		e.RetryAfter = max(d.RetryAfter, time.Second)
	}
	return e
}

func ceilSeconds(d time.Duration) int {
	return int(math.Ceil(d.Seconds()))
}

// Requests wraps next with the requests-per-second limit of the principal that auth.Require put
// in the context; without a principal the request passes unlimited (Require must run first).
func (l *Limiter) Requests(next http.Handler) http.Handler {
	return l.RequestsAnswering(next, func(w http.ResponseWriter, _ *http.Request, e httpx.Error) { httpx.WriteError(w, e) })
}

// RequestsAnswering is Requests for a route that answers errors in its own form: reject writes
// the refusal (RejectError's; the RateLimit-* headers are already set).
func (l *Limiter) RequestsAnswering(next http.Handler, reject func(http.ResponseWriter, *http.Request, httpx.Error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := auth.FromContext(r.Context())
		if !ok || p.Tenant == "" {
			next.ServeHTTP(w, r)
			return
		}
		d := l.AllowRequest(r.Context(), p.Tenant, p.KeyID)
		WriteHeaders(w, d)
		if !d.Allowed {
			reject(w, r, RejectError(d))
			return
		}
		next.ServeHTTP(w, r)
	})
}
