package httpx

import "net/http"

// Routes serves mux, answering what no pattern matches with the JSON error form: an unknown path
// is 404 not_found, a known path called with a method none of its patterns accepts is 405
// http.method_not_allowed with the mux's Allow header (the methods the path accepts). mux must
// not have a catch-all "/" pattern, which would match every method and hide the 405s.
func Routes(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern == "" {
			// No pattern matched: h is the mux's plain-text 404 or 405 handler. Run it into a
			// recorder to learn which (and the Allow it computed), then answer in JSON.
			rec := &fallbackRecorder{header: http.Header{}}
			h.ServeHTTP(rec, r)
			if rec.status == http.StatusMethodNotAllowed {
				w.Header().Set("Allow", rec.header.Get("Allow"))
				WriteError(w, Error{Status: http.StatusMethodNotAllowed, Code: "http.method_not_allowed",
					Message: r.Method + " is not allowed on " + r.URL.Path + "; allowed: " + rec.header.Get("Allow")})
				return
			}
			NotFound(w, r)
			return
		}
		nameSpan(r, pattern)
		mux.ServeHTTP(w, r)
	})
}

// fallbackRecorder keeps the status and headers of the mux's fallback handler and drops its body.
type fallbackRecorder struct {
	header http.Header
	status int
}

func (f *fallbackRecorder) Header() http.Header { return f.header }

func (f *fallbackRecorder) WriteHeader(status int) {
	if f.status == 0 {
		f.status = status
	}
}

func (f *fallbackRecorder) Write(b []byte) (int, error) {
	f.WriteHeader(http.StatusOK)
	return len(b), nil
}
