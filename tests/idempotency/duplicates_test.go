package idempotency

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/knob"
)

// dedupeMatrix is the gateway of each dedupe backend: the local store on the all-embedded
// set, DynamoDB (dynalite) on the split-capable set of external backends.
// pairs is how many requests are sent twice at once: dynalite (one Node process, ~200
// conditional writes/s under concurrency on this 2-core box) answers slower than the store's 3 s
// call timeout when 64 requests hit it together, and a commit that times out turns a replay into
// a second processing that only the queue's duplicate window absorbs.
var dedupeMatrix = []struct {
	name  string
	b     backends
	pairs int
}{
	{"local", backends{}, 32},
	{"dynamodb", backends{Store: "clickhouse", MQ: "nats", Cache: "redis", Dedupe: "dynamodb"}, 8},
}

// requestCount is how many distinct keyed requests TestDuplicateRequests sends, each twice
// (WH_TEST_IDEM_REQUESTS; default 1000).
func requestCount(t *testing.T) int {
	t.Helper()
	return int(knob.Int(t, "WH_TEST_IDEM_REQUESTS", 1000, 20))
}

const eventsDDL = "CREATE TABLE %s (id String, n UInt64) ENGINE = MergeTree() ORDER BY id"

// keyedBody is the NDJSON body of request i: two rows with ids <prefix><i>-a and -b.
func keyedBody(prefix string, i int) []byte {
	return fmt.Appendf(nil, "{\"id\":\"%s%d-a\",\"n\":%d}\n{\"id\":\"%s%d-b\",\"n\":%d}\n", prefix, i, i, prefix, i, i)
}

// settleTimeout bounds how long sendUntilSettled retries one request: far above a lease (2 s in
// the SIGKILL tests, 30 s by default) and a dedupe store's restart.
const settleTimeout = 2 * time.Minute

// retryCounts tallies the retryable answers a client got before its final one.
type retryCounts struct {
	inFlight    atomic.Int64 // 409 idempotency.in_flight
	unavailable atomic.Int64 // 503 dedupe.unavailable
}

// sendUntilSettled sends a keyed request until it gets something other than a retryable
// answer (409 idempotency.in_flight, 503 dedupe.unavailable), as a client would. It polls with
// a short backoff rather than waiting out Retry-After (the rest of a whole lease), but fails on
// a retryable answer without Retry-After, and on retryable answers for longer than
// settleTimeout (a dedupe store down for that long is a failure to report, not to wait out).
func sendUntilSettled(ctx context.Context, g *gateway, table, key string, body []byte, rc *retryCounts) (gatewaybin.Response, error) {
	backoff := 20 * time.Millisecond
	deadline := time.Now().Add(settleTimeout)
	for {
		r, err := g.ingest(ctx, table, key, "", body)
		if err != nil {
			return r, err
		}
		switch {
		case r.Status == http.StatusConflict && r.Code() == "idempotency.in_flight":
			rc.inFlight.Add(1)
		case r.Status == http.StatusServiceUnavailable && r.Code() == "dedupe.unavailable":
			rc.unavailable.Add(1)
		default:
			return r, nil
		}
		if r.Header.Get("Retry-After") == "" {
			return r, fmt.Errorf("retryable answer without Retry-After: %s", r)
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("still a retryable answer after %v: %s", settleTimeout, r)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// TestDuplicateRequests sends every keyed request twice at the same moment (and reuses some keys
// with a different body afterwards) and requires: one original answer and one replay carrying
// Idempotent-Replayed with the same status and body; 422 idempotency.key_reused for every
// reused key; and every row exactly once in ClickHouse, none from the mismatched bodies.
func TestDuplicateRequests(t *testing.T) {
	for _, m := range dedupeMatrix {
		t.Run(m.name, func(t *testing.T) {
			g := newGateway(t, m.b, nil)
			const table = "events"
			g.sql(t, fmt.Sprintf(eventsDDL, table))
			n := requestCount(t)
			run := testUniqueSuffix()
			var (
				rc         retryCounts
				mismatches atomic.Int64
				wg         sync.WaitGroup
				work       = make(chan int)
			)
			start := time.Now()
			for range m.pairs {
				wg.Go(func() {
					for i := range work {
						if err := duplicatePair(t.Context(), g, table, fmt.Sprintf("key-%s-%d", run, i), i, &rc, &mismatches); err != nil {
							t.Errorf("request %d: %v", i, err)
						}
					}
				})
			}
			for i := range n {
				work <- i
			}
			close(work)
			wg.Wait()
			if t.Failed() {
				return
			}
			t.Logf("%d requests sent twice concurrently in %v: %d answers were 409 in_flight and %d were 503 dedupe.unavailable before the final one, %d keys reused with another body",
				n, time.Since(start).Round(time.Millisecond), rc.inFlight.Load(), rc.unavailable.Load(), mismatches.Load())

			g.settled(t, table, 2*n)
			s := g.stats(t, table)
			if s.Total != 2*n || s.Distinct != 2*n || len(s.Repeated) > 0 {
				t.Errorf("table holds %d rows, %d distinct, want %d each; repeated ids (first ones): %v", s.Total, s.Distinct, 2*n, firstOf(s.Repeated, 10))
			}
			got := g.ids(t, table)
			for i := range n {
				for _, suffix := range []string{"-a", "-b"} {
					if id := fmt.Sprintf("r%d%s", i, suffix); !got[id] {
						t.Errorf("row %s is missing", id)
					}
					if id := fmt.Sprintf("x%d%s", i, suffix); got[id] {
						t.Errorf("row %s of a request refused with 422 is in the table", id)
					}
				}
			}
		})
	}
}

// duplicatePair sends request i twice concurrently with one key and checks the answers; for
// every 20th request it then reuses the key with another body (422) and retries the original
// once more (the original answer again).
func duplicatePair(ctx context.Context, g *gateway, table, key string, i int, rc *retryCounts, mismatches *atomic.Int64) error {
	body := keyedBody("r", i)
	var (
		answers [2]gatewaybin.Response
		errs    [2]error
		wg      sync.WaitGroup
		gate    = make(chan struct{})
	)
	for j := range answers {
		wg.Go(func() {
			<-gate
			answers[j], errs[j] = sendUntilSettled(ctx, g, table, key, body, rc)
		})
	}
	close(gate)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	a, b := answers[0], answers[1]
	if !replayed(a) && !replayed(b) && a.Status == b.Status && bytes.Equal(a.Body, b.Body) {
		return fmt.Errorf("both answers were processed, not replayed (the queue's duplicate window absorbed the second publish; "+
			"look for \"idempotency record not settled\" in the gateway log): %s", a)
	}
	if replayed(a) == replayed(b) {
		return fmt.Errorf("want exactly one original and one replayed answer, got replayed=%v %s and replayed=%v %s", replayed(a), a, replayed(b), b)
	}
	orig := a
	if replayed(a) {
		orig = b
	}
	if orig.Status != http.StatusAccepted {
		return fmt.Errorf("original answer %s, want 202", orig)
	}
	if a.Status != b.Status || !bytes.Equal(a.Body, b.Body) {
		return fmt.Errorf("replay differs from the original: %s vs %s", a, b)
	}
	if i%20 != 0 {
		return nil
	}
	mismatches.Add(1)
	r, err := sendUntilSettled(ctx, g, table, key, keyedBody("x", i), rc)
	if err != nil {
		return err
	}
	if r.Status != http.StatusUnprocessableEntity || r.Code() != "idempotency.key_reused" || replayed(r) {
		return fmt.Errorf("key reused with another body: %s, want 422 idempotency.key_reused", r)
	}
	again, err := sendUntilSettled(ctx, g, table, key, body, rc)
	if err != nil {
		return err
	}
	if !replayed(again) || again.Status != orig.Status || !bytes.Equal(again.Body, orig.Body) {
		return fmt.Errorf("retry after the reuse: %s (replayed=%v), want the original %s replayed", again, replayed(again), orig)
	}
	return nil
}

// testUniqueSuffix makes keys of one run distinct from any earlier run's.
func testUniqueSuffix() string { return strconv.FormatInt(time.Now().UnixNano(), 36) }

// firstOf returns up to n entries of m, for error messages.
func firstOf(m map[string]int, n int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		if len(out) == n {
			break
		}
		out[k] = v
	}
	return out
}
