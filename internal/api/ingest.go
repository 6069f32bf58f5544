package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/ingest/commits"
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
	// format, when valid, is the body's format (the ClickHouse interface's FORMAT); else the
	// Content-Type decides.
	format   request.Format
	encoding string
	// columns is an INSERT's column list (request.Options.Columns), nil without one.
	columns []string
	// idemKey is the request's idempotency key, "" for none; interp are the request's other
	// parts that decide how its body is read, which its fingerprint covers.
	idemKey string
	interp  []string
	target  store.Target
	cols    []store.Column
	body    []byte // as sent (still compressed), read once into a pooled buffer (request.ReadRaw)
	// out is how the route answers.
	out answers
}

// answers is how an ingest route answers, the steps after parsing being shared: /v1/ingest in
// the gateway's JSON (jsonAnswers), the ClickHouse interface in ClickHouse's form.
type answers interface {
	// fail answers an error.
	fail(w http.ResponseWriter, e httpx.Error)
	// limited answers a refused rows-per-second decision.
	limited(w http.ResponseWriter, d limits.Decision)
	// accepted answers published rows; wr is the outcome of ?wait=committed (zero without).
	accepted(w http.ResponseWriter, call ingestCall, res request.Result, pub mq.PublishResult, wr waitResult)
	// replay sends an idempotency record's response again.
	replay(w http.ResponseWriter, resp dedupe.Response)
}

// waitResult is what waiting for a record's insert found.
type waitResult struct {
	committed, deadLettered bool
}

// jsonAnswers answers /v1/ingest.
type jsonAnswers struct{}

func (jsonAnswers) fail(w http.ResponseWriter, e httpx.Error)        { httpx.WriteError(w, e) }
func (jsonAnswers) limited(w http.ResponseWriter, d limits.Decision) { limits.Reject(w, d) }

func (jsonAnswers) replay(w http.ResponseWriter, resp dedupe.Response) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// accepted answers 202 with the counts and the queue position, or with ?wait=committed 200 once
// the rows are in ClickHouse (202 with committed false when they are not yet, or were
// dead-lettered).
func (jsonAnswers) accepted(w http.ResponseWriter, call ingestCall, res request.Result, pub mq.PublishResult, wr waitResult) {
	resp := ingestResponse{Accepted: res.Accepted, Rejected: res.Rejected, Sequence: pub.Position.String(), Errors: res.Errors, ErrorCount: res.ErrorCount}
	status := http.StatusAccepted
	if call.wait {
		resp.Committed, resp.DeadLettered = &wr.committed, wr.deadLettered
		if wr.committed {
			status = http.StatusOK
		}
	}
	httpx.WriteJSON(w, status, resp)
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
	defer request.ReleaseRaw(call.body) // runIngest is done with it when it returns
	outcome = a.runIngest(w, r, call)
}

// runIngest runs a parsed ingest request of either route under its idempotency key and
// returns the outcome to count.
func (a *API) runIngest(w http.ResponseWriter, r *http.Request, call ingestCall) string {
	return a.idempotent(w, r, call, func(w http.ResponseWriter, keyed *keyedRecord) string {
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
	call := a.newCall(r, start, table)
	call.partial, call.wait = q.Get("partial") == "true", wait == "committed"
	call.contentType, call.encoding = r.Header.Get("Content-Type"), r.Header.Get("Content-Encoding")
	call.idemKey = r.Header.Get(IdempotencyHeader)
	call.interp = []string{call.contentType, call.encoding, q.Get("partial")}
	if herr := a.resolve(&call); herr != nil {
		return ingestCall{}, outcomeError, herr
	}
	// The body is read once (bounded), so it can be validated again after a schema refresh.
	var herr *httpx.Error
	if call.body, herr = request.ReadRaw(r.Body, r.ContentLength, a.cfg.Limits); herr != nil {
		return ingestCall{}, outcomeRejected, herr
	}
	return call, "", nil
}

// newCall starts the ingest call of request r into table, answering in the gateway's JSON.
func (a *API) newCall(r *http.Request, start time.Time, table string) ingestCall {
	tp := requestTraceparent(r)
	return ingestCall{ctx: logging.WithTraceID(r.Context(), tp[3:35]), start: start, tenant: a.tenant(r), table: table, traceparent: tp, out: jsonAnswers{}}
}

// resolve finds the call's store target and its table's columns.
func (a *API) resolve(call *ingestCall) *httpx.Error {
	var herr *httpx.Error
	if call.target, herr = a.targetOf(call.tenant); herr != nil {
		return herr
	}
	cols, err := a.deps.Schema.Columns(call.ctx, call.target, call.table)
	if err != nil {
		return a.storeErr(err, call.table)
	}
	call.cols = cols
	return nil
}

// ingestRows validates, admits, publishes and answers one parsed request, writing to w, and
// returns the outcome to count. keyed, when not nil, is the claimed request's queue side, which
// makes a second publish of the same request a duplicate.
func (a *API) ingestRows(w http.ResponseWriter, call ingestCall, keyed *keyedRecord) string {
	res, herr := a.validate(call)
	if herr != nil {
		call.out.fail(w, *herr)
		return outcomeRejected
	}
	if d, ok := a.admit(call, res.Accepted); !ok {
		limits.WriteHeaders(w, d)
		call.out.limited(w, d)
		return outcomeLimited
	}
	pub, herr := a.publish(call, res, keyed)
	if herr != nil {
		call.out.fail(w, *herr)
		return outcomeError
	}
	return a.respond(w, call, res, pub)
}

// validate checks every row against the table's columns, once more against freshly read
// columns when a row names a column the cached schema lacks (the table may have gained it).
// A request with no valid row is refused, partial or not.
func (a *API) validate(call ingestCall) (request.Result, *httpx.Error) {
	opts := request.Options{Partial: call.partial, Columns: call.columns}
	parse := func(cols []store.Column) (request.Result, *httpx.Error) {
		b, herr := boundPolicy(call.ctx, call.table, cols)
		if herr != nil {
			return request.Result{}, herr
		}
		if b != nil {
			opts.Policy = b
		}
		if call.format.Valid() {
			return request.ParseFormatBytes(call.format, call.encoding, call.body, cols, a.cfg.Limits, opts)
		}
		return request.ParseBytes(call.contentType, call.encoding, call.body, cols, a.cfg.Limits, opts)
	}
	res, herr := parse(call.cols)
	if mentionsUnknownColumn(res, herr) || herr != nil && herr.Code == request.CodeInvalidColumns {
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

// publish stores the accepted rows' payload (encoded by the parse) in the queue as one record; a 2xx may
// only follow a nil error (the record is durable then).
func (a *API) publish(call ingestCall, res request.Result, keyed *keyedRecord) (mq.PublishResult, *httpx.Error) {
	rec := mq.Record{
		Tenant: call.tenant, Table: call.table, Payload: res.Payload, AcceptedAt: call.start,
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

// respond answers a published request in the route's form, after ?wait=committed waited
// (bounded) for the outcome of its insert.
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
	var wr waitResult
	if call.wait {
		wr = a.waitCommitted(call.ctx, call.tenant, call.table, pub.Position)
	}
	w.Header().Set("traceparent", call.traceparent)
	call.out.accepted(w, call, res, pub, wr)
	return outcome
}

// waitCommitted waits (bounded) until the record is settled.
func (a *API) waitCommitted(ctx context.Context, tenant, table string, pos mq.Position) waitResult {
	if a.deps.Commits == nil {
		return waitResult{}
	}
	wctx, cancel := context.WithTimeout(ctx, a.cfg.WaitTimeout)
	defer cancel()
	o, err := a.deps.Commits.Wait(wctx, tenant, table, pos)
	switch {
	case err != nil:
		return waitResult{}
	case o == commits.DeadLettered:
		return waitResult{deadLettered: true}
	}
	return waitResult{committed: true}
}

// publishErr maps a failed publish to its answer. Only ErrQueueFull and ErrTooLarge say the
// record was surely not stored; every other failure may have stored it, so the client is told
// to retry with the same Idempotency-Key.
func (a *API) publishErr(err error) *httpx.Error {
	switch {
	case errors.Is(err, mq.ErrQueueFull):
		return &httpx.Error{Status: http.StatusTooManyRequests, Code: "ingest.queue_full", Message: queueFullMessage(err), Retryable: true, RetryAfter: a.cfg.RetryAfter}
	case errors.Is(err, mq.ErrTooLarge):
		return &httpx.Error{Status: http.StatusRequestEntityTooLarge, Code: request.CodeBodyTooLarge, Message: err.Error()}
	case errors.Is(err, context.Canceled):
		return &httpx.Error{Status: statusClientClosed, Code: "ingest.canceled", Message: "request canceled before the rows were stored; they may or may not be queued", Retryable: true}
	default:
		return &httpx.Error{Status: http.StatusServiceUnavailable, Code: "ingest.queue_unavailable", Message: "the queue did not confirm the rows are stored; retry with the same Idempotency-Key", Retryable: true, RetryAfter: a.cfg.RetryAfter}
	}
}

// queueFullMessage names the bound a refused publish reached: the stream of the table's
// partition, the tenant's budget, or (neither) the queue server's storage.
func queueFullMessage(err error) string {
	switch {
	case errors.Is(err, mq.ErrStreamFull):
		return "the queue partition stream of this table reached its byte bound; retry later"
	case errors.Is(err, mq.ErrTenantBudget):
		return "the tenant's queue budget is exhausted; retry later"
	default:
		return "the queue server's storage is full; retry later"
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
