package api

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/ingest/commits"
	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/ingest/request"
	"github.com/wavehouse/wavehouse/internal/limits"
	"github.com/wavehouse/wavehouse/internal/logging"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/tracing"
)

// The outcomes of an ingest request (the outcome label of wavehouse_ingest_request_duration_seconds).
const (
	outcomeAccepted = "accepted"
	outcomeReplayed = "replayed"
	outcomeRejected = "rejected"
	outcomeLimited  = "limited"
	outcomeError    = "error"
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

// ingestCall is one parsed ingest request: what the steps after parsing need of it.
type ingestCall struct {
	ctx           context.Context // the request's, with its trace id
	start         time.Time
	tenant, table string
	partial       bool
	wait          bool // ?wait=committed
	traceparent   string
	contentType   string
	encoding      string
	target        store.Target
	cols          []store.Column
	body          []byte // as sent (still compressed), read once
}

// ingest serves POST /v1/ingest/{table}: parse the request, hand it to the idempotency wrapper,
// which runs the rest (validate, admit, publish, respond) and holds a keyed request's answer
// until its record is settled.
func (a *API) ingest(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	outcome := outcomeError
	defer func() { a.metrics.observeIngest(outcome, start) }()
	call, failed, herr := a.parseIngest(r, start)
	if herr != nil {
		outcome = failed
		httpx.WriteError(w, *herr)
		return
	}
	outcome = a.idempotent(w, r, call, func(w http.ResponseWriter, keyed *keyedRecord) string {
		return a.ingestRows(w, call, keyed)
	})
}

// parseIngest reads what the request asks for: the table, the query parameters, the trace
// context, the tenant's target and the table's columns, and the body (bounded). On failure it
// returns the error to answer and the outcome to count: a body that cannot be read is the
// client's fault ("rejected"), the rest is counted as "error" as it always was.
func (a *API) parseIngest(r *http.Request, start time.Time) (ingestCall, string, *httpx.Error) {
	table := r.PathValue("table")
	if !validTableName(table) {
		return ingestCall{}, outcomeError, &httpx.Error{Status: http.StatusBadRequest, Code: "ingest.invalid_table", Message: "table name must be 1-255 printable characters"}
	}
	q := r.URL.Query()
	wait := q.Get("wait")
	if wait != "" && wait != "committed" {
		return ingestCall{}, outcomeError, &httpx.Error{Status: http.StatusBadRequest, Code: "ingest.invalid_parameter", Message: `wait must be "committed" or absent`}
	}
	tp := requestTraceparent(r)
	call := ingestCall{
		ctx: logging.WithTraceID(r.Context(), tp[3:35]), start: start, tenant: a.tenant(r), table: table,
		partial: q.Get("partial") == "true", wait: wait == "committed", traceparent: tp,
		contentType: r.Header.Get("Content-Type"), encoding: r.Header.Get("Content-Encoding"),
	}
	var herr *httpx.Error
	if call.target, herr = a.targetOf(call.tenant); herr != nil {
		return ingestCall{}, outcomeError, herr
	}
	cols, err := a.deps.Schema.Columns(call.ctx, call.target, table)
	if err != nil {
		return ingestCall{}, outcomeError, a.storeErr(err, table)
	}
	call.cols = cols
	// The body is read once (bounded), so it can be validated again after a schema refresh.
	if call.body, herr = request.ReadRaw(r.Body, r.ContentLength, a.cfg.Limits); herr != nil {
		return ingestCall{}, outcomeRejected, herr
	}
	return call, "", nil
}

// ingestRows validates, admits, publishes and answers one parsed request, writing to w, and
// returns the outcome to count. keyed, when not nil, is the claimed request's queue side, which
// makes a second publish of the same request a duplicate.
func (a *API) ingestRows(w http.ResponseWriter, call ingestCall, keyed *keyedRecord) string {
	res, herr := a.validate(call)
	if herr != nil {
		httpx.WriteError(w, *herr)
		return outcomeRejected
	}
	if d, ok := a.admit(call, res.Accepted); !ok {
		limits.Reject(w, d)
		return outcomeLimited
	}
	pub, herr := a.publish(call, res, keyed)
	if herr != nil {
		httpx.WriteError(w, *herr)
		return outcomeError
	}
	return a.respond(w, call, res, pub)
}

// validate checks every row against the table's columns, once more against freshly read
// columns when a row names a column the cached schema lacks (the table may have gained it).
// A request with no valid row is refused, partial or not.
func (a *API) validate(call ingestCall) (request.Result, *httpx.Error) {
	opts := request.Options{Partial: call.partial}
	parse := func(cols []store.Column) (request.Result, *httpx.Error) {
		b, herr := boundPolicy(call.ctx, call.table, cols)
		if herr != nil {
			return request.Result{}, herr
		}
		if b != nil {
			opts.Policy = b
		}
		return request.Parse(call.contentType, call.encoding, bytes.NewReader(call.body), cols, a.cfg.Limits, opts)
	}
	res, herr := parse(call.cols)
	if mentionsUnknownColumn(res, herr) {
		if fresh, err := a.deps.Schema.Refresh(call.ctx, call.target, call.table); err == nil && len(fresh) != len(call.cols) {
			res, herr = parse(fresh)
		}
	}
	if herr != nil {
		return request.Result{}, herr
	}
	a.metrics.rowsRejected.Add(float64(res.Rejected))
	if res.Accepted == 0 {
		return request.Result{}, &httpx.Error{Status: http.StatusBadRequest, Code: request.CodeInvalidRows, Message: "no row of the request is valid",
			Details: request.InvalidRows{Total: res.Total, Rejected: res.Rejected, ErrorCount: res.ErrorCount, ErrorsByCode: res.ErrorsByCode, Errors: res.Errors}}
	}
	return res, nil
}

// admit charges the accepted rows to the key's and the tenant's rows-per-second buckets.
func (a *API) admit(call ingestCall, rows int) (limits.Decision, bool) {
	p, ok := auth.FromContext(call.ctx)
	if !ok {
		return limits.Decision{}, true
	}
	d := a.deps.Limits.AllowRows(call.ctx, call.tenant, p.KeyID, rows)
	return d, d.Allowed
}

// publish encodes the accepted rows once and stores them in the queue as one record; a 2xx may
// only follow a nil error (the record is durable then).
func (a *API) publish(call ingestCall, res request.Result, keyed *keyedRecord) (mq.PublishResult, *httpx.Error) {
	data, err := payload.Encode(res.Segments)
	if err != nil {
		return mq.PublishResult{}, &httpx.Error{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()}
	}
	rec := mq.Record{
		Tenant: call.tenant, Table: call.table, Payload: data, AcceptedAt: call.start,
		Headers: map[string]string{mq.HeaderTraceparent: call.traceparent},
	}
	if keyed != nil {
		// The record joins the group commit; its claim is marked with the frame's id before
		// the frame is stored, so a retry after a crash between this publish and the
		// idempotency commit finds the frame instead of enqueueing the rows again (mq.Claim).
		rec.IdempotencyKey, rec.Claim = keyed.queueKey, keyed.claim
	}
	ctx, span := tracing.Start(call.ctx, a.deps.Tracer, "publish", trace.SpanKindProducer)
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(attribute.String("wavehouse.table", call.table), attribute.Int("wavehouse.rows", res.Accepted))
	}
	pub, err := a.deps.Queue.Publish(ctx, rec)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return mq.PublishResult{}, a.publishErr(err)
	}
	return pub, nil
}

// respond answers a published request: 202 with the counts and the queue position, or with
// ?wait=committed the outcome of its insert (bounded).
func (a *API) respond(w http.ResponseWriter, call ingestCall, res request.Result, pub mq.PublishResult) string {
	outcome := outcomeAccepted
	if pub.Duplicate {
		// The queue already holds this request (a retry after a commit that was lost): answer
		// with the first position and say so.
		w.Header().Set(ReplayedHeader, "true")
		outcome = outcomeReplayed
	} else {
		a.metrics.rowsAccepted.Add(float64(res.Accepted))
	}
	resp := ingestResponse{Accepted: res.Accepted, Rejected: res.Rejected, Sequence: pub.Position.String(), Errors: res.Errors, ErrorCount: res.ErrorCount}
	status := http.StatusAccepted
	if call.wait {
		status = a.waitCommitted(call.ctx, call.tenant, call.table, pub.Position, &resp)
	}
	w.Header().Set("traceparent", call.traceparent)
	httpx.WriteJSON(w, status, resp)
	return outcome
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

// publishErr maps a failed publish to its answer. Only ErrQueueFull and ErrTooLarge say the
// record was surely not stored; every other failure may have stored it, so the client is told
// to retry with the same Idempotency-Key.
func (a *API) publishErr(err error) *httpx.Error {
	switch {
	case errors.Is(err, mq.ErrQueueFull):
		return &httpx.Error{Status: http.StatusTooManyRequests, Code: "ingest.queue_full", Message: "the tenant's queue budget is exhausted; retry later", Retryable: true, RetryAfter: a.cfg.RetryAfter}
	case errors.Is(err, mq.ErrTooLarge):
		return &httpx.Error{Status: http.StatusRequestEntityTooLarge, Code: request.CodeBodyTooLarge, Message: err.Error()}
	case errors.Is(err, context.Canceled):
		return &httpx.Error{Status: statusClientClosed, Code: "ingest.canceled", Message: "request canceled before the rows were stored; they may or may not be queued", Retryable: true}
	default:
		return &httpx.Error{Status: http.StatusServiceUnavailable, Code: "ingest.queue_unavailable", Message: "the queue did not confirm the rows are stored; retry with the same Idempotency-Key", Retryable: true, RetryAfter: a.cfg.RetryAfter}
	}
}

// statusClientClosed is nginx's 499: the client went away before the answer was known.
const statusClientClosed = 499

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
		if e.Code == request.RowUnknownColumn {
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
