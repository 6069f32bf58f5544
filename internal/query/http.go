package query

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/store"
)

// body is the JSON of POST /v1/query.
type body struct {
	SQL     string                     `json:"sql"`
	Params  map[string]json.RawMessage `json:"params"`
	Format  string                     `json:"format"`
	MaxRows uint64                     `json:"max_rows"`
}

// ServeHTTP answers POST /v1/query for tenant, whose tables live in target.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request, tenant string, target store.Target) {
	var b body
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		err = dec.Decode(&b)
	}
	if err != nil {
		httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "query.invalid_request", Message: `send {"sql": "...", "params": {...}, "format": "json|ndjson|csv"}: ` + err.Error()})
		return
	}
	req := Request{SQL: b.SQL, Format: Format(strings.ToLower(b.Format)), MaxRows: b.MaxRows,
		NoCache: r.URL.Query().Get("cache") == "false" || strings.Contains(r.Header.Get("Cache-Control"), "no-cache")}
	if req.Format == "" {
		req.Format = FormatJSON
	}
	if len(b.Params) > 0 {
		req.Params = make(map[string][]byte, len(b.Params))
		for k, v := range b.Params {
			req.Params[k] = v
		}
	}
	s.Serve(w, r.Context(), tenant, target, req)
}

// Serve runs req and writes the response (also used by pipes).
func (s *Service) Serve(w http.ResponseWriter, ctx context.Context, tenant string, target store.Target, req Request) {
	if err := Check(req); err != nil {
		s.writeError(w, err)
		return
	}
	key, cacheable := s.cacheKey(ctx, tenant, target.Database, req)
	if !cacheable {
		w.Header().Set("X-Cache", "BYPASS")
		w.Header().Set("Cache-Control", "no-store")
		s.stream(w, ctx, target, req)
		return
	}
	if v, err := s.deps.Cache.Get(ctx, key); err == nil {
		w.Header().Set("X-Cache", "HIT")
		s.writeBody(w, req.Format, v)
		return
	}
	res, err, _ := s.flights.Do(key.String(), func() (any, error) {
		out, err := s.buffered(context.WithoutCancel(ctx), target, req)
		if err != nil {
			return nil, err
		}
		ttl := s.cfg.CacheTTL
		if req.TTL > 0 {
			ttl = req.TTL
		}
		if err := s.deps.Cache.Set(context.WithoutCancel(ctx), key, out, ttl); err != nil && !errors.Is(err, cache.ErrTooLarge) {
			s.deps.Log.Debug("cache fill failed", "error", err)
		}
		return out, nil
	})
	if errors.Is(err, errTooLarge) {
		w.Header().Set("X-Cache", "MISS")
		s.stream(w, ctx, target, req)
		return
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	w.Header().Set("X-Cache", "MISS")
	s.writeBody(w, req.Format, res.([]byte))
}

func (s *Service) writeBody(w http.ResponseWriter, f Format, b []byte) {
	w.Header().Set("Content-Type", f.ContentType())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// stream runs the query straight to the client, flushing as rows arrive.
func (s *Service) stream(w http.ResponseWriter, ctx context.Context, target store.Target, req Request) {
	rc := http.NewResponseController(w)
	sent := false
	fw := flushWriter{w: w, rc: rc, every: 64 << 10}
	err := s.execute(ctx, target, req, &fw, func() {
		sent = true
		w.Header().Set("Content-Type", req.Format.ContentType())
		w.WriteHeader(http.StatusOK)
	})
	if err != nil && !sent {
		s.writeError(w, err)
		return
	}
	_ = rc.Flush()
}

type flushWriter struct {
	w       io.Writer
	rc      *http.ResponseController
	pending int
	every   int
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.pending += n
	if f.pending >= f.every {
		f.pending = 0
		_ = f.rc.Flush()
	}
	return n, err
}

func (s *Service) writeError(w http.ResponseWriter, err error) {
	msg := err.Error()
	switch {
	case errors.Is(err, ErrRejected):
		httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "query.rejected", Message: msg})
	case errors.Is(err, ErrBusy):
		httpx.WriteError(w, httpx.Error{Status: http.StatusTooManyRequests, Code: "query.too_many_concurrent", Message: msg, Retryable: true, RetryAfter: time.Second})
	case errors.Is(err, store.ErrLimitExceeded):
		httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "query.limit_exceeded", Message: msg})
	case errors.Is(err, store.ErrUnknownTable), errors.Is(err, store.ErrUnknownDatabase):
		httpx.WriteError(w, httpx.Error{Status: http.StatusNotFound, Code: "query.unknown_table", Message: msg})
	case store.IsTransient(err):
		httpx.WriteError(w, httpx.Error{Status: http.StatusServiceUnavailable, Code: "store.unavailable", Message: msg, Retryable: true, RetryAfter: time.Second})
	case errors.Is(err, context.Canceled):
		httpx.WriteError(w, httpx.Error{Status: 499, Code: "query.canceled", Message: msg})
	default:
		httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "query.rejected", Message: msg})
	}
}
