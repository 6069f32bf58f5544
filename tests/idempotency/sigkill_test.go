package idempotency

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/api"
	"github.com/wavehouse/wavehouse/internal/ingest/writer"
	"github.com/wavehouse/wavehouse/internal/testutil/knob"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// killCycles is how many times a SIGKILL test kills the gateway (WH_TEST_IDEM_KILL_CYCLES;
// default: once per kill mode).
func killCycles(t *testing.T, modes []string) int {
	t.Helper()
	return int(knob.Int(t, "WH_TEST_IDEM_KILL_CYCLES", int64(len(modes)), 1))
}

// rowsPerKilledRequest is the number of rows of each request of TestSIGKILLKeyedIngest.
const rowsPerKilledRequest = 5

// requestRows is the body of keyed request i of a crash test: rowsPerKilledRequest rows with ids
// "<prefix><i>-<j>" (enqueued.requireOnce counts them).
func requestRows(prefix string, i int) []byte {
	var b bytes.Buffer
	for j := range rowsPerKilledRequest {
		fmt.Fprintf(&b, "{\"id\":\"%s%d-%d\",\"n\":%d}\n", prefix, i, j, i)
	}
	return b.Bytes()
}

// ledger is what the clients of TestSIGKILLKeyedIngest know: the answer of every request that
// got a 2xx, and the requests that did not (to retry).
type ledger struct {
	mu      sync.Mutex
	acked   map[int]gatewaybin.Response
	pending map[int]bool
}

func (l *ledger) record(i int, r gatewaybin.Response, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && r.Status/100 == 2 {
		l.acked[i] = r
		delete(l.pending, i)
		return
	}
	l.pending[i] = true
}

func (l *ledger) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// toRetry returns the requests without a 2xx, and every 10th acknowledged one.
func (l *ledger) toRetry() (pending, acked []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.pending {
		pending = append(pending, i)
	}
	for i := range l.acked {
		if i%10 == 0 {
			acked = append(acked, i)
		}
	}
	return pending, acked
}

// dedupDDL creates a table that keeps an insert deduplication log, so a batch the writer
// re-inserts after a crash (with the same deduplication tokens) is dropped by the engine.
const dedupDDL = eventsDDL + " SETTINGS non_replicated_deduplication_window = 1000"

// crashAt is when the fault build's --fault-kill-after kills the gateway at point: after the
// 8th batch's insert or mark (writer points), the 8th shared frame's mark, or the 40th keyed
// request's publish.
func crashAt(point string) int {
	if point == string(api.FaultKeyedPublished) {
		return 40
	}
	return 8
}

// Kill modes: an external SIGKILL at a random point of the stream, or the fault build's
// --fault-kill-after killing the process at a point: right after an insert (before the batch
// plan is marked, writer.FaultInserted), right after that mark (before the acks,
// writer.FaultMarked), right after a shared frame's claims were marked (before the frame is
// published, api.FaultKeyedMarked), or right after a keyed request was published (before its
// idempotency record is committed, api.FaultKeyedPublished).
var (
	allKillModes   = []string{"external", string(writer.FaultInserted), string(writer.FaultMarked), string(api.FaultKeyedMarked), string(api.FaultKeyedPublished)}
	keyedKillModes = []string{"external", string(api.FaultKeyedMarked), string(api.FaultKeyedPublished)}
)

// TestSIGKILLKeyedIngest kills the all-embedded gateway (Pebble dedupe, embedded NATS) with
// SIGKILL while clients send keyed requests — at random points, between a shared frame's marks
// and its publish, between a publish and its idempotency commit, and between an insert and its
// acknowledgement — restarts it on the same data dir, has the clients retry with the same keys
// every request that got no 2xx (and some that did), repeats, and then requires every key and
// row enqueued exactly once and every row exactly once in ClickHouse.
func TestSIGKILLKeyedIngest(t *testing.T) {
	sigkillKeyed(t, backends{}, allKillModes)
}

// TestSIGKILLKeyedIngestSplit is TestSIGKILLKeyedIngest on the split backends: DynamoDB dedupe
// (dynalite) and an external nats-server, at the keyed publish path's crash points.
func TestSIGKILLKeyedIngestSplit(t *testing.T) {
	sigkillKeyed(t, backends{MQ: "nats", Dedupe: "dynamodb"}, keyedKillModes)
}

func sigkillKeyed(t *testing.T, b backends, modes []string) {
	// A short lease, so a claim held by a request the kill interrupted lapses quickly; it stays
	// far below the queue's 2 min duplicate window, within which a marked claim's frame is
	// resolved.
	g := newGateway(t, b, func(c *gatewayConfig) { c.Lease = "2s" })
	const table = "killed"
	g.sql(t, fmt.Sprintf(dedupDDL, table))
	run := testUniqueSuffix()
	key := func(i int) string { return fmt.Sprintf("kill-%s-%d", run, i) }
	body := func(i int) []byte { return requestRows("s", i) }
	l := &ledger{acked: map[int]gatewaybin.Response{}, pending: map[int]bool{}}
	var next atomic.Int64
	var rc retryCounts
	cycles := killCycles(t, modes)
	killMode := func(c int) string { return modes[c%len(modes)] }
	for cycle := range cycles {
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for ctx.Err() == nil {
					i := int(next.Add(1)) - 1
					r, err := g.ingest(ctx, table, key(i), "", body(i))
					l.record(i, r, err)
				}
			})
		}
		mode := killMode(cycle)
		if mode == "external" {
			before := l.ackedCount()
			poll.Until(t, 60*time.Second, "acknowledged keyed requests under load", func() bool { return l.ackedCount()-before >= 100 })
			g.proc.Kill(t)
		} else {
			g.proc.MustExit(t, 90*time.Second)
		}
		cancel()
		wg.Wait()
		g.proc.SetArgs()
		g.proc.Start(t)

		pending, acked := l.toRetry()
		t.Logf("cycle %d (%s): killed with %d requests acknowledged, %d without a 2xx; retrying those and %d acknowledged ones",
			cycle, mode, l.ackedCount(), len(pending), len(acked))
		replays := 0
		for _, i := range append(pending, acked...) {
			orig, wasAcked := l.acked[i]
			r, err := sendUntilSettled(t.Context(), g, table, key(i), body(i), &rc)
			if err != nil {
				t.Fatalf("retrying request %d: %v", i, err)
			}
			if r.Status != http.StatusAccepted {
				t.Fatalf("retrying request %d: %s, want 202", i, r)
			}
			if replayed(r) {
				replays++
			}
			// A 2xx whose record was not yet committed when the process died is processed
			// again; its marked claim's frame is resolved to the first position, so the
			// answer is the same either way.
			if wasAcked && !bytes.Equal(r.Body, orig.Body) {
				t.Errorf("retrying acknowledged request %d: %s, want the original %s", i, r, orig)
			}
			l.record(i, r, nil)
		}
		t.Logf("cycle %d: retries done, %d of them replayed, %d answers 409 in_flight so far", cycle, replays, rc.inFlight.Load())
		if next := killMode(cycle + 1); cycle+1 < cycles && next != "external" {
			// Armed only now, so the retries above do not count towards the fault's n.
			g.proc.Stop(t)
			g.proc.SetArgs(fmt.Sprintf("--fault-kill-after=%s:%d", next, crashAt(next)))
			g.proc.Start(t)
		}
	}

	sent := int(next.Load())
	if p, _ := l.toRetry(); len(p) > 0 {
		t.Fatalf("%d requests never got a 2xx", len(p))
	}
	want := sent * rowsPerKilledRequest
	g.settled(t, table, want)
	s := g.stats(t, table)
	g.proc.Stop(t)
	q := readQueue(t, g, table)

	// The idempotency guarantee: every key, and so every row, enqueued exactly once.
	q.requireOnce(t, sent, "s")

	// End to end: every row in ClickHouse exactly once. A row stored twice although enqueued
	// once was inserted, then redelivered because the kill came before its frame's ack; the
	// writer's batch journal and deduplication tokens must have dropped the second insert.
	if s.Distinct != want {
		t.Errorf("after %d kills: ClickHouse holds %d distinct rows, want %d", cycles, s.Distinct, want)
	}
	if len(s.Repeated) > 0 {
		redelivered := 0
		for id := range s.Repeated {
			if q.Rows[id] == 1 {
				redelivered++
			}
		}
		t.Errorf("ClickHouse holds %d rows for %d distinct; %d ids stored more than once, %d of them enqueued once "+
			"(inserted again after a kill between insert and ack); first ones: %v",
			s.Total, s.Distinct, len(s.Repeated), redelivered, firstOf(s.Repeated, 10))
	}
	if !t.Failed() {
		t.Logf("%d kills, %d keyed requests (%d rows): every key and row enqueued exactly once; ClickHouse holds %d rows, %d distinct",
			cycles, sent, want, s.Total, s.Distinct)
	}
}
