package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// rowsPerRequest is the rows of every ingest request. Request number b carries the ids
// b*rowsPerRequest … b*rowsPerRequest+rowsPerRequest-1, so ClickHouse's answer can be grouped
// per request (intDiv(id, rowsPerRequest)).
const rowsPerRequest = 50

// Load shape: unkeyed and keyed clients sending at once.
const (
	unkeyedClients = 8
	keyedClients   = 4
)

// requestTimeout bounds one ingest request; a request that times out has an unknown outcome.
const requestTimeout = 30 * time.Second

// retryPause paces a client after a refused or failed request.
const retryPause = 50 * time.Millisecond

// outcome is what the client knows about one request.
type outcome uint8

const (
	// unknown: no 2xx (refused, reset mid-request, timed out, cancelled): the rows may be
	// stored 0 or more times; they count neither as lost nor as duplicated.
	unknown outcome = iota
	// acked: an unkeyed request answered 2xx; every row must be stored exactly once.
	acked
	// keyedAcked: a keyed request answered 2xx, possibly after retries with the same key;
	// every row must be stored exactly once.
	keyedAcked
	// keyedGaveUp: a keyed request answered a final refusal (4xx other than 409 in flight or
	// 429), or the load stopped before it was acknowledged.
	keyedGaveUp
)

// ledger records the outcome of every request of one scenario. It is safe for concurrent use.
type ledger struct {
	next atomic.Uint64 // the next request number

	mu       sync.Mutex
	outcomes map[uint64]outcome
	statuses map[int]int // answers other than 2xx by status (0: transport error)
	retries  int         // keyed requests sent again with the same key
	lastErr  string      // the last final refusal of a keyed request
	acks     int         // requests acknowledged, both kinds
	start    time.Time   // when the ledger was made: attempts are timed from it
	trail    map[uint64][]attempt
}

// attempt is one try of a request, kept to name what happened to a request whose rows are
// lost or duplicated.
type attempt struct {
	at, took time.Duration // sent at (since the ledger's start); answered after
	status   int           // 0: transport error
	detail   string        // the refusal's error code, the transport error, or "replayed"
}

func (a attempt) String() string {
	return fmt.Sprintf("at %s took %s: %d %s", a.at.Round(time.Millisecond), a.took.Round(time.Millisecond), a.status, a.detail)
}

func newLedger() *ledger {
	return &ledger{outcomes: map[uint64]outcome{}, statuses: map[int]int{}, start: time.Now(), trail: map[uint64][]attempt{}}
}

// tried records one attempt of request b, sent at sent, with its answer (r or err).
func (l *ledger) tried(b uint64, sent time.Time, r gatewaybin.Response, err error) {
	a := attempt{status: r.Status}
	switch {
	case err != nil:
		a.status, a.detail = 0, err.Error()
	case r.Header.Get("Idempotent-Replayed") != "":
		a.detail = "replayed"
	case !r.OK():
		var e gatewaybin.APIError
		if json.Unmarshal(r.Body, &e) == nil && e.Code != "" {
			a.detail = e.Code
		} else {
			a.detail = fmt.Sprintf("%.80s", r.Body)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	a.at, a.took = sent.Sub(l.start), time.Since(sent)
	l.trail[b] = append(l.trail[b], a)
}

// history describes request b: its outcome and every attempt.
func (l *ledger) history(b uint64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var s strings.Builder
	fmt.Fprintf(&s, "request %d (ids %d-%d, %s)", b, b*rowsPerRequest, b*rowsPerRequest+rowsPerRequest-1, l.outcomes[b])
	// A run of attempts with the same answer is one line: first and last attempt.
	trail := l.trail[b]
	for i := 0; i < len(trail); {
		j := i
		for j+1 < len(trail) && trail[j+1].status == trail[i].status && trail[j+1].detail == trail[i].detail {
			j++
		}
		if j == i {
			fmt.Fprintf(&s, "\n  attempt %d (X-Request-Id %s) %s", i, requestID(b, i), trail[i])
		} else {
			fmt.Fprintf(&s, "\n  attempts %d-%d (%d×, X-Request-Id %s…%s) first %s; last %s", i, j, j-i+1, requestID(b, i), requestID(b, j), trail[i], trail[j])
		}
		i = j + 1
	}
	return s.String()
}

// requestID is the X-Request-Id of attempt i of request b, which names it in the gateway's log.
func requestID(b uint64, i int) string { return fmt.Sprintf("chaos-%d-%d", b, i) }

func (o outcome) String() string {
	switch o {
	case acked:
		return "unkeyed, acknowledged"
	case keyedAcked:
		return "keyed, acknowledged"
	case keyedGaveUp:
		return "keyed, given up"
	}
	return "no 2xx"
}

// take returns a new request number, recorded as unknown until told otherwise.
func (l *ledger) take() uint64 {
	b := l.next.Add(1) - 1
	l.mu.Lock()
	l.outcomes[b] = unknown
	l.mu.Unlock()
	return b
}

func (l *ledger) set(b uint64, o outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outcomes[b] = o
	if o == acked || o == keyedAcked {
		l.acks++
	}
}

func (l *ledger) refused(status int, body string, final bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.statuses[status]++
	if final {
		l.lastErr = fmt.Sprintf("%d %.300s", status, body)
	}
}

func (l *ledger) retried() {
	l.mu.Lock()
	l.retries++
	l.mu.Unlock()
}

// acknowledged returns how many requests got a 2xx so far.
func (l *ledger) acknowledged() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acks
}

// snapshot copies the outcomes.
func (l *ledger) snapshot() map[uint64]outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[uint64]outcome, len(l.outcomes))
	for b, o := range l.outcomes {
		out[b] = o
	}
	return out
}

// body is the NDJSON of request b: rowsPerRequest rows with consecutive ids; keyed rows have
// k = 1.
func body(b uint64, keyed bool) []byte {
	k := 0
	if keyed {
		k = 1
	}
	var s strings.Builder
	for j := range uint64(rowsPerRequest) {
		fmt.Fprintf(&s, "{\"id\":%d,\"k\":%d}\n", b*rowsPerRequest+j, k)
	}
	return []byte(s.String())
}

// pause waits retryPause unless ctx ends first.
func pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(retryPause):
	}
}

// loadGen runs the unkeyed and keyed clients of one scenario against api, whose Base stays the
// same across restarts of the process behind it.
type loadGen struct {
	api   gatewaybin.Client
	table string
	run   string // makes idempotency keys unique to this scenario
	l     *ledger

	stopUnkeyed context.CancelFunc
	stopKeyed   context.CancelFunc // ends the keyed clients even mid-retry (the bound of stop)
	keyedDone   atomic.Bool        // keyed clients start no new request once set
	wg          sync.WaitGroup
}

// startLoad starts the clients; stop ends them.
func startLoad(ctx context.Context, api gatewaybin.Client, table, run string, l *ledger) *loadGen {
	g := &loadGen{api: api, table: table, run: run, l: l}
	uctx, ucancel := context.WithCancel(ctx)
	kctx, kcancel := context.WithCancel(ctx)
	g.stopUnkeyed, g.stopKeyed = ucancel, kcancel
	for range unkeyedClients {
		g.wg.Go(func() { g.unkeyed(uctx) })
	}
	for range keyedClients {
		g.wg.Go(func() { g.keyed(kctx) })
	}
	return g
}

// stop cancels the unkeyed clients, lets every keyed client retry its current request until it
// is acknowledged (at most within bound), and waits for all of them.
func (g *loadGen) stop(bound time.Duration) {
	g.stopUnkeyed()
	g.keyedDone.Store(true)
	t := time.AfterFunc(bound, g.stopKeyed)
	defer t.Stop()
	g.wg.Wait()
	g.stopKeyed()
}

// send sends attempt i of request b (with key, when set) and records it in the ledger.
func (g *loadGen) send(ctx context.Context, b uint64, i int, key string) (gatewaybin.Response, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	h := http.Header{"Content-Type": {"application/x-ndjson"}, "X-Request-Id": {requestID(b, i)}}
	if key != "" {
		h.Set("Idempotency-Key", key)
	}
	sent := time.Now()
	r, err := g.api.Try(rctx, http.MethodPost, "/v1/ingest/"+g.table, h, body(b, key != ""))
	g.l.tried(b, sent, r, err)
	return r, err
}

// unkeyed sends each request once: a 2xx makes its rows acknowledged, anything else leaves them
// unknown (an unkeyed request is never sent again, so no row of it is sent twice).
func (g *loadGen) unkeyed(ctx context.Context) {
	for ctx.Err() == nil {
		b := g.l.take()
		r, err := g.send(ctx, b, 0, "")
		switch {
		case err == nil && r.OK():
			g.l.set(b, acked)
			continue
		case err != nil:
			g.l.refused(0, err.Error(), false)
		default:
			g.l.refused(r.Status, string(r.Body), false)
		}
		pause(ctx)
	}
}

// keyed sends each request with its own Idempotency-Key and sends it again with the same key on
// any transport error, timeout, 5xx, 429 or 409 idempotency.in_flight, until it is
// acknowledged.
func (g *loadGen) keyed(ctx context.Context) {
	for ctx.Err() == nil && !g.keyedDone.Load() {
		b := g.l.take()
		key := fmt.Sprintf("%s-%d", g.run, b)
		for attempt := 0; ; attempt++ {
			if attempt > 0 {
				g.l.retried()
			}
			r, err := g.send(ctx, b, attempt, key)
			if err == nil && r.OK() {
				g.l.set(b, keyedAcked)
				break
			}
			if ctx.Err() != nil {
				g.l.set(b, keyedGaveUp)
				return
			}
			if err != nil {
				g.l.refused(0, err.Error(), false)
			} else {
				retryable := r.Status >= 500 || r.Status == http.StatusTooManyRequests || r.Status == http.StatusConflict
				g.l.refused(r.Status, string(r.Body), !retryable)
				if !retryable {
					g.l.set(b, keyedGaveUp)
					break
				}
			}
			pause(ctx)
		}
	}
}
