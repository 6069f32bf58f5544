package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/httpx"
)

// IdempotencyHeader names the client's idempotency key; ReplayedHeader marks a recorded
// response sent again.
const (
	IdempotencyHeader = "Idempotency-Key"
	ReplayedHeader    = "Idempotent-Replayed"
)

// Idempotency tunes Idempotency-Key handling.
type Idempotency struct {
	// Lease bounds how long a request may hold its key before another may claim it. Keep it
	// below the queue's duplicate window, within which a retry after a crash between publish and
	// commit resolves the claim's frame.
	Lease time.Duration
	// Retention is how long a recorded response is replayed.
	Retention time.Duration
}

// claim is a won idempotency reservation, settled when the response is known.
type claim struct {
	key         dedupe.Key
	token       string
	fingerprint string
	// prior is the frame an earlier attempt of the request was marked with (dedupe.Claim.Frame).
	prior string
}

// queueKey identifies the claimed request inside its queue frame: the key and the request's
// fingerprint, so resolving a marked frame recognises the same request but never a different
// request that reuses the key after its record expired.
func (c *claim) queueKey() string {
	return dedupe.QueueKey(c.key, c.fingerprint)
}

// maxInFlightRetryAfter caps the Retry-After of a 409: the first request usually finishes in
// milliseconds, long before its lease would lapse.
const maxInFlightRetryAfter = time.Second

// idempotent runs handle, the rest of an ingest request, under the request's Idempotency-Key.
// Without a key (or without a dedupe store) handle answers w directly. A key already answered
// replays its recorded response; a key in flight or reused for another request is refused. A
// won claim gives handle the queue side of the claim (keyedRecord) and a writer that holds the
// answer until the idempotency record is settled, so a client that got a 2xx finds the record on any
// retry, whenever it comes (the queue's duplicate window covers a retry only for minutes). It
// returns the outcome to count. A handle that panics settles nothing: the claim's lease lapses
// and the retry resolves the frame the claim was marked with before publishing again.
func (a *API) idempotent(w http.ResponseWriter, r *http.Request, call ingestCall, handle func(w http.ResponseWriter, keyed *keyedRecord) string) string {
	c, done, replayed := a.reserve(w, r, call)
	switch {
	case replayed:
		return outcomeReplayed
	case done:
		return outcomeRejected
	case c == nil:
		return handle(w, nil)
	}
	rec := &recorder{ResponseWriter: w}
	outcome := handle(rec, a.keyed(c))
	if rec.status/100 == 2 || rec.status == 0 {
		a.fault(FaultKeyedPublished)
	}
	a.settleThenSend(call, c, rec, w)
	return outcome
}

// reserve handles the Idempotency-Key of an ingest request. It returns the claim to settle, or
// done when it already answered (replayed is then true for a recorded response sent again). A
// request without the header, or a server without a dedupe store, gets neither.
func (a *API) reserve(w http.ResponseWriter, r *http.Request, call ingestCall) (c *claim, done, replayed bool) {
	id, tenant, table := call.idemKey, call.tenant, call.table
	if id == "" || a.deps.Dedupe == nil {
		return nil, false, false
	}
	if !validIdempotencyKey(id) {
		call.out.fail(w, httpx.Error{Status: http.StatusBadRequest, Code: "idempotency.invalid_key", Message: "Idempotency-Key must be 1-255 printable characters"})
		return nil, true, false
	}
	key := dedupe.Key{Tenant: tenant, Table: table, ID: scopedKeyID(r, id)}
	fp := fingerprint(tenant, table, call.interp, call.body)
	res, err := a.deps.Dedupe.Reserve(r.Context(), key, fp, a.cfg.Idempotency.Lease)
	switch {
	case err == nil:
	case errors.Is(err, dedupe.ErrInvalid):
		call.out.fail(w, httpx.Error{Status: http.StatusBadRequest, Code: "idempotency.invalid_key", Message: err.Error()})
		return nil, true, false
	case errors.Is(err, context.Canceled):
		call.out.fail(w, httpx.Error{Status: statusClientClosed, Code: "ingest.canceled", Message: "request canceled", Retryable: true})
		return nil, true, false
	default:
		a.deps.Log.WarnContext(r.Context(), "idempotency reserve failed", "error", err)
		call.out.fail(w, httpx.Error{Status: http.StatusServiceUnavailable, Code: "dedupe.unavailable",
			Message: "idempotency keys cannot be checked right now; retry with the same key", Retryable: true, RetryAfter: a.cfg.RetryAfter})
		return nil, true, false
	}
	if res.MarkLapsed {
		// The limit of docs/idempotency.md#limits: an earlier attempt was marked with a queue
		// frame that can no longer be resolved, so this one may enqueue the rows again.
		a.deps.Log.WarnContext(r.Context(), "idempotency: a retry claimed a key whose earlier attempt can no longer be resolved; its rows may be enqueued twice",
			"tenant", tenant, "table", table)
	}
	switch res.Outcome {
	case dedupe.OutcomeDuplicate:
		w.Header().Set(ReplayedHeader, "true")
		call.out.replay(w, res.Record.Response)
		return nil, true, true
	case dedupe.OutcomeInFlight:
		call.out.fail(w, httpx.Error{Status: http.StatusConflict, Code: "idempotency.in_flight",
			Message: "a request with this Idempotency-Key is still being processed", Retryable: true, RetryAfter: min(res.RetryAfter, maxInFlightRetryAfter)})
		return nil, true, false
	case dedupe.OutcomeMismatch:
		call.out.fail(w, httpx.Error{Status: http.StatusUnprocessableEntity, Code: "idempotency.key_reused",
			Message: "this Idempotency-Key was used for a different request (tenant, table or body differ)"})
		return nil, true, false
	}
	return &claim{key: key, token: res.Claim.Token, fingerprint: fp, prior: res.Claim.Frame}, false, false
}

// settle records the response of a claimed request so retries replay it, or releases the key
// when the outcome is worth retrying (the request may not have taken effect).
func (a *API) settle(ctx context.Context, c *claim, status int, body []byte) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var err error
	if retryable(status) {
		err = a.deps.Dedupe.Release(ctx, c.key, c.token)
	} else {
		err = a.deps.Dedupe.Commit(ctx, c.key, c.token, dedupe.Response{Status: status, Body: body}, a.retention(c.key.Tenant))
	}
	if err != nil {
		// The lease lapses by itself; a retry then resolves the claim's marked frame.
		a.deps.Log.WarnContext(ctx, "idempotency record not settled", "status", status, "error", err)
	}
	return err
}

// settleThenSend settles the claim with the response rec holds, then sends that response to
// the client: the record is durable before the client can see the outcome.
func (a *API) settleThenSend(call ingestCall, c *claim, rec *recorder, client http.ResponseWriter) {
	ctx := call.ctx
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	stored := rec.body.Bytes()
	if rec.record != nil {
		stored = rec.record
	}
	if status/100 == 2 && a.fault(FaultCommitLost) {
		// The fault build: no commit, the answer sent and flushed, then the hook's kill.
		client.Header().Set("Content-Length", strconv.Itoa(rec.body.Len()))
		client.WriteHeader(status)
		_, _ = client.Write(rec.body.Bytes())
		_ = http.NewResponseController(client).Flush()
		a.fault(FaultKeyedAnswered)
		return
	}
	if err := a.settle(ctx, c, status, stored); err != nil && !retryable(status) {
		// The request took effect but its record is not stored: answer with a prompt retry,
		// which, once the claim's lease lapsed, finds the claim's frame (the rows are not enqueued again) and
		// whose answer settles the record.
		call.out.fail(client, httpx.Error{Status: http.StatusServiceUnavailable, Code: "idempotency.unsettled",
			Message: "the request was accepted but its idempotency record could not be stored; retry with the same key", Retryable: true, RetryAfter: time.Second})
		return
	}
	client.WriteHeader(status)
	_, _ = client.Write(rec.body.Bytes())
}

// retryable statuses release the key: the same request may succeed later.
func retryable(status int) bool {
	return status >= 500 || status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status == statusClientClosed
}

// fingerprint identifies the request a key was first used for: same tenant, table, body and
// interpretation (interp: /v1/ingest's content type, encoding and partial; the ClickHouse
// interface's statement and encoding).
func fingerprint(tenant, table string, interp []string, body []byte) string {
	h := sha256.New()
	for _, s := range append([]string{tenant, table}, interp...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// scopedKeyID is the idempotency record's ID for key id sent by the request's principal. API keys
// and the operator share their tenant's keyspace (a client may retry through another key of its
// tenant); a JWT principal gets its own, by issuer and subject, so two end users sending the same
// key (and body: a column forced from a claim is not in the body) never answer each other's
// requests. The separator is a control character, which a client's key cannot contain
// (validIdempotencyKey), so a scoped ID never equals a tenant-wide one.
func scopedKeyID(r *http.Request, id string) string {
	p, ok := auth.FromContext(r.Context())
	if !ok || !p.Token {
		return id
	}
	iss, _ := p.Claims["iss"].(string)
	return "\x1fjwt\x1f" + iss + "\x1f" + p.Subject + "\x1f" + id
}

func validIdempotencyKey(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for _, c := range []byte(s) {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// recorder holds a response (status and body; headers go to the real writer's map) until the
// idempotency record is settled: see settleThenSend.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	// record, when set (setRecord), is what the record stores in place of the body sent.
	record []byte
}

// recordSetter is the writer of an answer under an idempotency claim, which may store more
// than the body it sends: a ClickHouse INSERT's answer is an empty body whose meaning is in
// its headers (chAnswers.accepted), which a replay sends again from the record.
type recordSetter interface {
	setRecord(b []byte)
}

func (r *recorder) setRecord(b []byte) { r.record = b }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
