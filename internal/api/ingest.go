package api

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/ingest/commits"
	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/ingest/request"
	"github.com/wavehouse/wavehouse/internal/limits"
	"github.com/wavehouse/wavehouse/internal/logging"
	"github.com/wavehouse/wavehouse/internal/mq"
)

// ingestResponse is the body of a successful ingest.
type ingestResponse struct {
	Accepted     int                `json:"accepted"`
	Rejected     int                `json:"rejected,omitempty"`
	Sequence     string             `json:"sequence,omitempty"`
	Committed    *bool              `json:"committed,omitempty"`
	DeadLettered bool               `json:"dead_lettered,omitempty"`
	Errors       []request.RowError `json:"errors,omitempty"`
	ErrorCount   int                `json:"error_count,omitempty"`
}

func (a *API) ingest(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	tenant, table := a.tenant(r), r.PathValue("table")
	outcome := "error"
	defer func() { a.metrics.observeIngest(outcome, start) }()
	if !validTableName(table) {
		httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "ingest.invalid_table", Message: "table name must be 1-255 printable characters"})
		return
	}
	q := r.URL.Query()
	partial := q.Get("partial") == "true"
	wait := q.Get("wait")
	if wait != "" && wait != "committed" {
		httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "ingest.invalid_parameter", Message: `wait must be "committed" or absent`})
		return
	}
	tp := traceparent(r.Header.Get("traceparent"))
	ctx := logging.WithTraceID(r.Context(), tp[3:35])
	target, ok := a.target(w, tenant)
	if !ok {
		return
	}
	cols, err := a.deps.Schema.Columns(ctx, target, table)
	if err != nil {
		a.storeError(w, err, table)
		return
	}
	// The body is read once (bounded), so it can be validated again after a schema refresh.
	body, herr := readRaw(r, a.cfg.Limits)
	if herr != nil {
		outcome = "rejected"
		httpx.WriteError(w, *herr)
		return
	}
	c, done, replayed := a.reserve(w, r, tenant, table, body)
	if done {
		if replayed {
			outcome = "replayed"
		} else {
			outcome = "rejected"
		}
		return
	}
	if c != nil {
		// The response is held until the idempotency record is settled, so a client that got
		// a 2xx finds the record on any retry, whenever it comes (the queue's duplicate window
		// covers a retry only for minutes).
		rec := &recorder{ResponseWriter: w}
		client := w
		w = rec
		defer func() { a.settleThenSend(ctx, c, rec, client) }()
	}
	ct, ce := r.Header.Get("Content-Type"), r.Header.Get("Content-Encoding")
	opts := request.Options{Partial: partial}
	res, herr := request.Parse(ct, ce, bytes.NewReader(body), cols, a.cfg.Limits, opts)
	if mentionsUnknownColumn(res, herr) {
		// The table may have gained a column since the schema was cached.
		if fresh, err := a.deps.Schema.Refresh(ctx, target, table); err == nil && len(fresh) != len(cols) {
			res, herr = request.Parse(ct, ce, bytes.NewReader(body), fresh, a.cfg.Limits, opts)
		}
	}
	if herr != nil {
		outcome = "rejected"
		httpx.WriteError(w, *herr)
		return
	}
	a.metrics.rowsRejected.Add(float64(res.Rejected))
	if res.Accepted == 0 {
		outcome = "rejected"
		httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "ingest.invalid_rows", Message: "no row of the request is valid",
			Details: request.InvalidRows{Total: res.Total, Rejected: res.Rejected, ErrorCount: res.ErrorCount, Errors: res.Errors}})
		return
	}
	if p, ok := auth.FromContext(ctx); ok {
		if d := a.deps.Limits.AllowRows(ctx, tenant, p.KeyID, res.Accepted); !d.Allowed {
			outcome = "limited"
			limits.Reject(w, d)
			return
		}
	}
	data, err := payload.Encode(res.Segments)
	if err != nil {
		httpx.WriteError(w, httpx.Error{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()})
		return
	}
	rec := mq.Record{
		Tenant: tenant, Table: table, Payload: data, AcceptedAt: start,
		Headers: map[string]string{mq.HeaderTraceparent: tp},
	}
	if c != nil {
		// Within the queue's duplicate window a second publish of this key is dropped, which
		// covers a crash between this publish and the idempotency commit.
		rec.IdempotencyKey = c.queueKey()
	}
	pub, err := a.deps.Queue.Publish(ctx, rec)
	if err != nil {
		a.publishError(w, err)
		return
	}
	outcome = "accepted"
	if pub.Duplicate {
		// The queue already holds this request (a retry after a commit that was lost): answer
		// with the first position and say so.
		w.Header().Set(ReplayedHeader, "true")
		outcome = "replayed"
	} else {
		a.metrics.rowsAccepted.Add(float64(res.Accepted))
	}
	resp := ingestResponse{Accepted: res.Accepted, Rejected: res.Rejected, Sequence: pub.Position.String(), Errors: res.Errors, ErrorCount: res.ErrorCount}
	status := http.StatusAccepted
	if wait == "committed" {
		status = a.waitCommitted(ctx, tenant, table, pub.Position, &resp)
	}
	w.Header().Set("traceparent", tp)
	httpx.WriteJSON(w, status, resp)
}

// waitCommitted waits (bounded) until the record is settled and fills the response: 200 when
// its rows are in ClickHouse, else 202 with committed false.
func (a *API) waitCommitted(ctx context.Context, tenant, table string, pos mq.Position, resp *ingestResponse) int {
	committed := false
	resp.Committed = &committed
	if a.deps.Commits == nil {
		return http.StatusAccepted
	}
	wctx, cancel := context.WithTimeout(ctx, a.cfg.WaitTimeout)
	defer cancel()
	o, err := a.deps.Commits.Wait(wctx, tenant, table, pos)
	switch {
	case err != nil:
		return http.StatusAccepted
	case o == commits.DeadLettered:
		resp.DeadLettered = true
		return http.StatusAccepted
	}
	committed = true
	return http.StatusOK
}

func (a *API) publishError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, mq.ErrQueueFull):
		httpx.WriteError(w, httpx.Error{Status: http.StatusTooManyRequests, Code: "ingest.queue_full", Message: "the tenant's queue budget is exhausted; retry later", Retryable: true, RetryAfter: a.cfg.RetryAfter})
	case errors.Is(err, mq.ErrTooLarge):
		httpx.WriteError(w, httpx.Error{Status: http.StatusRequestEntityTooLarge, Code: "ingest.body_too_large", Message: err.Error()})
	case errors.Is(err, context.Canceled):
		httpx.WriteError(w, httpx.Error{Status: 499, Code: "ingest.canceled", Message: "request canceled before the rows were stored; they may or may not be queued", Retryable: true})
	default:
		httpx.WriteError(w, httpx.Error{Status: http.StatusServiceUnavailable, Code: "ingest.queue_unavailable", Message: "the queue did not confirm the rows are stored; retry with the same Idempotency-Key", Retryable: true, RetryAfter: a.cfg.RetryAfter})
	}
}

// readRaw reads the body as sent, refusing more than the limit.
func readRaw(r *http.Request, lim request.Limits) ([]byte, *httpx.Error) {
	max := lim.MaxBodyBytes
	if max <= 0 {
		max = request.DefaultMaxBodyBytes
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength <= max {
		buf.Grow(int(r.ContentLength))
	}
	n, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, max))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) || n > max {
			return nil, &httpx.Error{Status: http.StatusRequestEntityTooLarge, Code: "ingest.body_too_large", Message: "the body exceeds the limit of the request size"}
		}
		return nil, &httpx.Error{Status: http.StatusBadRequest, Code: "ingest.read_failed", Message: "reading the body failed: " + err.Error()}
	}
	return buf.Bytes(), nil
}

func mentionsUnknownColumn(res request.Result, herr *httpx.Error) bool {
	errs := res.Errors
	if herr != nil {
		d, ok := herr.Details.(request.InvalidRows)
		if !ok {
			return false
		}
		errs = d.Errors
	}
	for _, e := range errs {
		if e.Code == "unknown_column" {
			return true
		}
	}
	return false
}

func validTableName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f || c == 0xfffd {
			return false
		}
	}
	return true
}
