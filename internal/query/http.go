package query

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/policy"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/tracing"
)

// body is the JSON of POST /v1/query.
type body struct {
	SQL     string                     `json:"sql"`
	Params  map[string]json.RawMessage `json:"params"`
	Format  string                     `json:"format"`
	MaxRows uint64                     `json:"max_rows"`
}

// maxBody is the most of a /v1/query body that is read.
const maxBody = 1 << 20

// prepared is what a /v1/query body decodes to, memoised by the body's bytes so that a
// dashboard's repeated request is neither decoded nor scanned nor digested again. It is
// shared by every request with the same body and must not be modified.
type prepared struct {
	req    Request // SQL, Params, Format, MaxRows
	info   *sqlInfo
	digest cache.QueryDigest // valid when info.err == nil
}

// headers are the header values of the hot path, built once: assigning a prebuilt slice
// costs no allocation. The slices are never modified (Header.Set replaces a value, and
// Header.Add appends to a full slice, which copies it).
type headers struct {
	hit, miss, bypass, noStore []string
	json, ndjson, csv          []string
}

func newHeaders() headers {
	return headers{
		hit: []string{"HIT"}, miss: []string{"MISS"}, bypass: []string{"BYPASS"}, noStore: []string{"no-store"},
		json: []string{FormatJSON.ContentType()}, ndjson: []string{FormatNDJSON.ContentType()}, csv: []string{FormatCSV.ContentType()},
	}
}

func (h *headers) contentType(f Format) []string {
	switch f {
	case FormatNDJSON:
		return h.ndjson
	case FormatCSV:
		return h.csv
	}
	return h.json
}

// ServeHTTP answers POST /v1/query for tenant, whose tables live in target.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request, tenant string, target store.Target) {
	s.ServeHTTPAllow(w, r, tenant, target, nil)
}

// ServeHTTPAllow answers POST /v1/query like ServeHTTP for a principal restricted to the
// tables allowTable accepts (see Request.AllowTable); nil means unrestricted.
func (s *Service) ServeHTTPAllow(w http.ResponseWriter, r *http.Request, tenant string, target store.Target, allowTable func(table string) bool) {
	s.ServeHTTPAccess(w, r, tenant, target, Access{AllowTable: allowTable})
}

// ServeHTTPAccess answers POST /v1/query like ServeHTTP for a caller whose credential restricts
// it as acc says.
func (s *Service) ServeHTTPAccess(w http.ResponseWriter, r *http.Request, tenant string, target store.Target, acc Access) {
	raw, err := s.readBody(r)
	var p *prepared
	if err == nil {
		var ok bool
		if p, ok = s.bodies.get(*raw); !ok {
			if p, err = s.prepare(*raw); err == nil {
				s.bodies.put(string(*raw), p, p.size())
			}
		}
	}
	s.releaseBody(raw)
	if err != nil {
		httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "query.invalid_request", Message: `send {"sql": "...", "params": {...}, "format": "json|ndjson|csv"}: ` + err.Error()})
		return
	}
	req := p.req
	req.NoCache = strings.Contains(r.Header.Get("Cache-Control"), "no-cache") ||
		(r.URL.RawQuery != "" && r.URL.Query().Get("cache") == "false")
	acc.Apply(&req)
	var digest *cache.QueryDigest
	if p.info.err == nil && req.Policy == nil && req.MaxRows == p.req.MaxRows {
		digest = &p.digest
	}
	s.serve(w, r.Context(), tenant, target, req, p.info, digest, gatewayResponder{s})
}

// readBody reads up to maxBody bytes of the body into a pooled buffer; give it back with
// releaseBody.
func (s *Service) readBody(r *http.Request) (*[]byte, error) {
	bp, _ := s.bufs.Get().(*[]byte)
	if bp == nil {
		b := make([]byte, 0, 4<<10)
		bp = &b
	}
	b := (*bp)[:0]
	var err error
	for len(b) < maxBody {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		var n int
		n, err = r.Body.Read(b[len(b):min(cap(b), maxBody)])
		b = b[:len(b)+n]
		if err != nil {
			break
		}
	}
	*bp = b
	if err == io.EOF {
		err = nil
	}
	return bp, err
}

func (s *Service) releaseBody(bp *[]byte) {
	if cap(*bp) <= 64<<10 {
		s.bufs.Put(bp)
	}
}

// prepare decodes a /v1/query body.
func (s *Service) prepare(raw []byte) (*prepared, error) {
	var b body
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return nil, err
	}
	req := Request{SQL: b.SQL, Format: Format(strings.ToLower(b.Format)), MaxRows: b.MaxRows}
	if req.Format == "" {
		req.Format = FormatJSON
	}
	if len(b.Params) > 0 {
		req.Params = make(map[string][]byte, len(b.Params))
		for k, v := range b.Params {
			req.Params[k] = v
		}
	}
	p := &prepared{req: req, info: s.sqlInfo(req.SQL)}
	if p.info.err == nil {
		p.digest = digestRequest(req, p.info)
	}
	return p, nil
}

// size approximates the bytes p holds.
func (p *prepared) size() int {
	n := len(p.req.SQL) + 128 + p.info.size()
	for k, v := range p.req.Params {
		n += len(k) + len(v) + 48
	}
	return n
}

// Serve runs req and writes the response (also used by pipes).
func (s *Service) Serve(w http.ResponseWriter, ctx context.Context, tenant string, target store.Target, req Request) {
	s.serve(w, ctx, tenant, target, req, s.sqlInfo(req.SQL), nil, gatewayResponder{s})
}

// responder writes the answers of one interface: /v1/query's (JSON errors), or the ClickHouse
// HTTP interface's.
type responder interface {
	// writeError answers err, before anything was sent.
	writeError(w http.ResponseWriter, err error)
	// header sets the headers of a successful answer in format f; st is what the query read
	// (nil when it is not known yet, or nothing ran: a cache hit).
	header(h http.Header, f Format, st *store.Stats)
}

// gatewayResponder answers /v1/query and pipes.
type gatewayResponder struct{ s *Service }

func (g gatewayResponder) writeError(w http.ResponseWriter, err error) { g.s.writeError(w, err) }
func (g gatewayResponder) header(h http.Header, f Format, _ *store.Stats) {
	h["Content-Type"] = g.s.hdr.contentType(f)
}

// serve runs req, whose SQL text info describes; digest, when not nil, is the request's
// cache.QueryDigest; resp writes the answer.
func (s *Service) serve(w http.ResponseWriter, ctx context.Context, tenant string, target store.Target, req Request, info *sqlInfo, digest *cache.QueryDigest, resp responder) {
	if err := check(req, info); err != nil {
		resp.writeError(w, err)
		return
	}
	if req.Policy != nil {
		var err error
		if req, err = applyPolicy(req); err != nil {
			resp.writeError(w, err)
			return
		}
		info, digest = s.sqlInfo(req.SQL), nil
	}
	if err := checkTables(req, info, target.Database); err != nil {
		resp.writeError(w, err)
		return
	}
	b := newBounds(s.deps.Limits(tenant), req)
	key, cacheable := s.cacheKey(ctx, tenant, target.Database, req, b, info, digest)
	if !cacheable {
		h := w.Header()
		h["X-Cache"] = s.hdr.bypass
		h["Cache-Control"] = s.hdr.noStore
		s.stream(w, ctx, target, req, b, resp)
		return
	}
	if v, err := s.view(ctx, key); err == nil {
		s.writeBody(w, req.Format, s.hdr.hit, v, resp, nil)
		return
	}
	res, err, _ := s.flights.Do(key.String(), func() (any, error) {
		// A flight that ended between this request's lookup and its Do has filled the cache:
		// look again before running, so a burst of identical cold requests reaches the store once.
		if v, err := s.view(ctx, key); err == nil {
			return flightResult{body: v, hit: true}, nil
		}
		fctx, span := tracing.Start(context.WithoutCancel(ctx), s.deps.Tracer, "cache fill", trace.SpanKindInternal)
		defer span.End()
		var st store.Stats
		out, err := s.buffered(fctx, target, req, b, &st)
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
			return nil, err
		}
		if err := s.deps.Cache.Set(fctx, key, out, b.ttl); err != nil && !errors.Is(err, cache.ErrTooLarge) {
			s.deps.Log.Debug("cache fill failed", "error", err)
		}
		return flightResult{body: out, stats: st}, nil
	})
	if errors.Is(err, errTooLarge) {
		w.Header()["X-Cache"] = s.hdr.miss
		s.stream(w, ctx, target, req, b, resp)
		return
	}
	if err != nil {
		resp.writeError(w, err)
		return
	}
	fr := res.(flightResult)
	xCache, st := s.hdr.miss, &fr.stats
	if fr.hit {
		xCache, st = s.hdr.hit, nil
	}
	s.writeBody(w, req.Format, xCache, fr.body, resp, st)
}

// flightResult is what a shared flight hands every request waiting on it: the result, and
// whether it came from the cache (filled by a flight that had just ended) instead of the store.
type flightResult struct {
	body  []byte
	hit   bool
	stats store.Stats // of the run that produced body (when not hit)
}

// writeBody answers 200 with a whole result. b may be shared with the cache; it is only read.
// st is what the run that produced b read (nil for a cache hit).
func (s *Service) writeBody(w http.ResponseWriter, f Format, xCache []string, b []byte, resp responder, st *store.Stats) {
	h := w.Header()
	resp.header(h, f, st)
	h["X-Cache"] = xCache
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// stream runs the query straight to the client, flushing as rows arrive.
func (s *Service) stream(w http.ResponseWriter, ctx context.Context, target store.Target, req Request, b bounds, resp responder) {
	rc := http.NewResponseController(w)
	sent := false
	fw := flushWriter{w: w, rc: rc, every: 64 << 10}
	err := s.execute(ctx, target, req, b, &fw, func() {
		sent = true
		resp.header(w.Header(), req.Format, nil)
		w.WriteHeader(http.StatusOK)
	}, nil)
	if err != nil && !sent {
		resp.writeError(w, err)
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

func (s *Service) writeError(w http.ResponseWriter, err error) { httpx.WriteError(w, httpError(err)) }

// httpError is the answer to a query's err: its status and stable code.
func httpError(err error) httpx.Error {
	if e, ok := policy.HTTPError(err); ok {
		return e
	}
	msg := err.Error()
	switch {
	case errors.Is(err, ErrTableNotAllowed):
		return httpx.Error{Status: http.StatusForbidden, Code: "auth.table_not_allowed", Message: msg}
	case errors.Is(err, ErrRejected):
		return httpx.Error{Status: http.StatusBadRequest, Code: "query.rejected", Message: msg}
	case errors.Is(err, store.ErrLimitExceeded):
		// 422: the request is valid, but its result is more than the tenant's limits allow, and
		// sending it again fails the same way (docs/query.md#limits says why not 413 or 504).
		e := httpx.Error{Status: http.StatusUnprocessableEntity, Code: "query.limit_exceeded", Message: msg}
		var le *LimitError
		if errors.As(err, &le) {
			e.Limit, e.Value = le.Limit, le.Value
		}
		return e
	case errors.Is(err, store.ErrUnknownTable), errors.Is(err, store.ErrUnknownDatabase):
		return httpx.Error{Status: http.StatusNotFound, Code: "query.unknown_table", Message: msg}
	case store.IsTransient(err):
		return httpx.Error{Status: http.StatusServiceUnavailable, Code: "store.unavailable", Message: msg, Retryable: true, RetryAfter: time.Second}
	case errors.Is(err, context.Canceled):
		return httpx.Error{Status: 499, Code: "query.canceled", Message: msg}
	}
	return httpx.Error{Status: http.StatusBadRequest, Code: "query.rejected", Message: msg}
}
