package stream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/mq"
)

// request is a parsed stream request.
type request struct {
	key  mq.TableKey
	view view
	from mq.Cursor
	// since is the id the client sent; resume is set when it sent one:
	// read privately from history, then live.
	since  string
	resume bool
}

// parseRequest reads the table, projection, filter and start position.
// Last-Event-ID (set by a reconnecting EventSource) wins over ?since.
func parseRequest(r *http.Request, tenant string) (request, *httpx.Error) {
	req := request{key: mq.TableKey{Tenant: tenant, Table: r.PathValue("table")}}
	if req.key.Table == "" || len(req.key.Table) > 255 {
		return req, &httpx.Error{Status: http.StatusBadRequest, Code: "stream.invalid_table", Message: "table name must be 1-255 characters"}
	}
	q := r.URL.Query()
	if cols := q.Get("columns"); cols != "" {
		for _, c := range strings.Split(cols, ",") {
			if c = strings.TrimSpace(c); c != "" {
				req.view.columns = append(req.view.columns, c)
			}
		}
	}
	for k, vs := range q {
		col, ok := strings.CutPrefix(k, "where.")
		if !ok {
			continue
		}
		if col == "" || len(vs) != 1 {
			return req, &httpx.Error{Status: http.StatusBadRequest, Code: "stream.invalid_parameter", Message: "where filters are where.<column>=<value>, one value per column"}
		}
		req.view.where = append(req.view.where, cond{column: col, value: vs[0]})
	}
	since := r.Header.Get("Last-Event-ID")
	if since == "" {
		since = q.Get("since")
	}
	switch since {
	case "", "now":
	default:
		from, err := parseID(since)
		if err != nil {
			return req, &httpx.Error{Status: http.StatusBadRequest, Code: "stream.invalid_id",
				Message: "Last-Event-ID or since must be an event id (\"epoch-seq-index\"), \"0\" for all retained history, or \"now\""}
		}
		req.from, req.since, req.resume = from, since, true
	}
	return req, nil
}

// deniedColumn refuses a view naming a column its row policy does not read: a ?where. on it
// would tell its values apart by which rows arrive.
func deniedColumn(v view) *httpx.Error {
	names := slices.Clone(v.columns)
	for _, c := range v.where {
		names = append(names, c.column)
	}
	for _, c := range names {
		if !v.rows.Readable(c) {
			return &httpx.Error{Status: http.StatusForbidden, Code: "policy.column_denied",
				Message: "this token's role may not read column " + strconv.Quote(c) + " of the table"}
		}
	}
	return nil
}

// ServeHTTP streams tenant's table (the {table} path value) as SSE until
// the client goes away, the service closes, or the stream ends under the
// slow-subscriber policy. The tenant comes from the caller's credential.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request, tenant string) {
	s.ServeHTTPPolicy(w, r, tenant, nil)
}

// ServeHTTPPolicy is ServeHTTP for a caller under a row policy (nil: none): rows it does not
// match are never sent, columns it may not read are left out, and naming such a column in
// ?columns= or ?where. is refused with 403 policy.column_denied before the stream opens.
func (s *Service) ServeHTTPPolicy(w http.ResponseWriter, r *http.Request, tenant string, rows RowPolicy) {
	req, herr := parseRequest(r, tenant)
	if herr == nil && rows != nil {
		req.view.rows = rows
		herr = deniedColumn(req.view)
	}
	if herr != nil {
		s.metrics.rejected.WithLabelValues("invalid").Inc()
		httpx.WriteError(w, *herr)
		return
	}
	if s.closed.Load() {
		s.metrics.rejected.WithLabelValues("closed").Inc()
		httpx.WriteError(w, httpx.Error{Status: http.StatusServiceUnavailable, Code: "stream.closed", Message: "the server is shutting down", Retryable: true, RetryAfter: s.cfg.Retry})
		return
	}
	if !s.acquire(tenant) {
		s.metrics.rejected.WithLabelValues("limit").Inc()
		httpx.WriteError(w, httpx.Error{Status: http.StatusTooManyRequests, Code: "stream.too_many_subscribers",
			Message: "the tenant has reached stream.max_subscribers in this process", Retryable: true, RetryAfter: s.cfg.Retry})
		return
	}
	defer s.release(tenant)

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)

	now := s.deps.Now()
	sub := newSubscriber(tenant, s.cfg.Buffer, s.cfg.SlowPolicy, now.UnixNano())
	if req.resume {
		done := s.resume(ctx, req.key, req.from, req.since, sub)
		if done == nil {
			return
		}
		defer func() { cancel(); <-done }()
	} else {
		if !s.join(req.key, sub) {
			return
		}
		defer s.leave(req.key, sub)
	}
	out := &sseWriter{w: w, rc: http.NewResponseController(w), s: s, timeout: s.cfg.WriteTimeout}
	out.buf = append(out.buf, "retry: "...)
	out.buf = strconv.AppendInt(out.buf, s.cfg.Retry.Milliseconds(), 10)
	out.buf = append(out.buf, "\n: stream open\n\n"...)
	if out.flush() != nil {
		return
	}
	s.pump(ctx, sub, req.view, out)
}

// pump writes sub's items until the stream ends.
func (s *Service) pump(ctx context.Context, sub *subscriber, v view, out *sseWriter) {
	tick := time.NewTicker(s.cfg.Heartbeat)
	defer tick.Stop()
	batch := make([]item, 64)
	for {
		n, ended := sub.take(batch)
		if ended {
			s.endStream(ctx, sub, out)
			return
		}
		if n > 0 {
			for i := range batch[:n] {
				out.item(batch[i], v, sub)
				batch[i] = item{}
			}
			if out.flush() != nil {
				s.metrics.disconnects.WithLabelValues("write").Inc()
				return
			}
			continue
		}
		select {
		case <-sub.notify:
		case <-tick.C:
			out.heartbeat()
			if out.flush() != nil {
				s.metrics.disconnects.WithLabelValues("write").Inc()
				return
			}
		case <-ctx.Done():
			if s.ctx.Err() != nil {
				s.metrics.disconnects.WithLabelValues("shutdown").Inc()
				out.buf = append(out.buf, ": server shutting down\n\n"...)
				out.skippedID()
				_ = out.flush()
			}
			return
		}
	}
}

// endStream closes a stream whose source ended, telling the client why in
// an SSE comment (EventSource reconnects with Last-Event-ID by itself).
func (s *Service) endStream(ctx context.Context, sub *subscriber, out *sseWriter) {
	slow, _ := sub.ended()
	switch {
	case slow:
		out.buf = append(out.buf, ": disconnected: slow subscriber, reconnect with Last-Event-ID\n\n"...)
	case s.ctx.Err() != nil:
		s.metrics.disconnects.WithLabelValues("shutdown").Inc()
		out.buf = append(out.buf, ": server shutting down\n\n"...)
	case ctx.Err() != nil:
		return // the client went away
	default:
		s.metrics.disconnects.WithLabelValues("queue").Inc()
		out.buf = append(out.buf, ": queue reader ended, reconnect with Last-Event-ID\n\n"...)
	}
	out.skippedID()
	_ = out.flush()
}

// sseWriter encodes items into one buffer per batch and flushes it.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	s       *Service
	timeout time.Duration
	buf     []byte
	// skipped is the id of the latest event that rendered no row (filtered
	// out); it is sent as an id-only line before the next heartbeat so a
	// reconnecting client does not replay it again.
	skipped      mq.Position
	skippedEpoch string
	hasSkipped   bool
}

func (o *sseWriter) item(it item, v view, sub *subscriber) {
	m := o.s.metrics
	switch {
	case it.ev != nil && it.ev.skipped != nil:
		frame, _ := it.ev.render(v)
		o.hasSkipped = false
		o.buf = append(o.buf, frame...)
		m.events.WithLabelValues("gap").Inc()
	case it.ev != nil:
		frame, rows := it.ev.render(v)
		if frame == nil {
			o.skipped, o.skippedEpoch, o.hasSkipped = it.ev.pos, it.ev.epoch, true
			return
		}
		o.hasSkipped = false
		o.buf = append(o.buf, frame...)
		m.rowsEvents.Inc()
		m.rows.Add(float64(rows))
		if it.ev.accepted.UnixNano() < sub.started {
			m.replayed.Inc()
		} else {
			m.latency.Observe(o.s.deps.Now().Sub(it.ev.accepted).Seconds())
		}
	case it.reset != nil:
		o.hasSkipped = false
		r := it.reset
		// The id is where delivery continues, so a reconnect does not
		// report the same reset again.
		after := formatID(r.epoch, r.After)
		data, _ := json.Marshal(map[string]string{"reason": r.Reason, "requested": r.requested, "after": after, "first": formatID(r.epoch, r.First)})
		o.buf = append(o.buf, "id: "...)
		o.buf = append(o.buf, after...)
		o.buf = append(o.buf, "\nevent: reset\ndata: "...)
		o.buf = append(append(o.buf, data...), "\n\n"...)
		m.events.WithLabelValues("reset").Inc()
	case it.gap != nil:
		g := it.gap
		d := map[string]any{"reason": "slow", "from": formatID(g.epoch, g.from), "to": formatID(g.epoch, g.to), "events": g.events}
		if g.hasAfter {
			d["after"] = formatID(g.epoch, g.after)
		}
		data, _ := json.Marshal(d)
		o.buf = append(o.buf, "event: gap\ndata: "...)
		o.buf = append(append(o.buf, data...), "\n\n"...)
		m.events.WithLabelValues("gap").Inc()
	}
}

// skippedID writes the id of trailing filtered-out events without an
// event: browsers record it as the last event id and dispatch nothing.
func (o *sseWriter) skippedID() {
	if o.hasSkipped {
		o.buf = append(o.buf, "id: "...)
		o.buf = appendID(o.buf, o.skippedEpoch, o.skipped)
		o.buf = append(o.buf, "\n\n"...)
		o.hasSkipped = false
	}
}

func (o *sseWriter) heartbeat() {
	o.skippedID()
	o.buf = append(o.buf, ": heartbeat\n\n"...)
}

// flush writes the buffer and flushes it to the client, bounded by the
// write timeout.
func (o *sseWriter) flush() error {
	if len(o.buf) == 0 {
		return nil
	}
	if o.timeout > 0 {
		_ = o.rc.SetWriteDeadline(time.Now().Add(o.timeout))
	}
	n, err := o.w.Write(o.buf)
	o.s.metrics.bytes.Add(float64(n))
	o.buf = o.buf[:0]
	if err == nil {
		err = o.rc.Flush()
	}
	if err != nil && errors.Is(err, http.ErrNotSupported) {
		err = nil
	}
	return err
}
