package chaos

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// Bounds of a scenario's waits, for this shared 2-core box.
const (
	progressTimeout = 3 * time.Minute // for acknowledged ingest after a fault recovered
	keyedStopBound  = 3 * time.Minute // for keyed requests in flight to be acknowledged
)

// progressRequests is how many requests must be acknowledged after a fault before the next: the
// load must have reached the recovered deployment, whatever the time it took.
const progressRequests = 20

// target is a deployment under load: where requests go, and where the outcome is read.
type target struct {
	// api is the API listener; its address stays the same across restarts.
	api gatewaybin.Client
	// ops is the ops listener of the process running the writer (and so the queue's consumer).
	ops string
	// dedupes says the table deduplicates inserts by token: a duplicate fails the scenario.
	dedupes bool
	// ddl creates the table through the gateway's /v1/ops/sql, as the operator with opKey; %s is
	// its name.
	ddl   string
	opKey string
	// create, when set, creates the table instead of ddl (on every node of a cluster, say).
	create func(t *testing.T, table string)
	// read counts what the table holds.
	read reader
	// writer accumulates the writer's in-doubt counter across the process's lives.
	writer *inDoubt
	// reserves accumulates the api process's idempotency reservations by outcome (bank it
	// before killing that process).
	reserves *inDoubt
	// writerLog returns the tail of the writer process's output, for a queue that did not drain.
	writerLog func() string
	// logs returns the output of every gateway process so far, to find a request's lines in.
	logs func() string
}

// fault is one kind of fault; inject strikes once and returns when the deployment recovered.
type fault struct {
	name   string
	inject func(t *testing.T, rng *rand.Rand)
}

// loadClient is an HTTP client for the load generators of one target.
func loadClient(base string) gatewaybin.Client {
	return gatewaybin.Client{Base: base, HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
}

// wait blocks for d, failing when the test ends first. It is the deliberate random delay before
// a fault, never a synchronisation.
func wait(t *testing.T, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	}
}

// runScenario creates table on tg, starts the load, injects f cycles times at random moments
// (each after the load made progress again), stops the load, waits until the queue drained,
// counts, records the scenario's row and fails on loss, and on duplicates where the table
// deduplicates or where the gateway did not count them as in doubt. It returns whether the
// queue drained.
func runScenario(t *testing.T, name, table string, tg target, f fault) (drainedOK bool) {
	t.Helper()
	if testing.Short() {
		t.Skip("chaos: skipped under -short")
	}
	s, n := seed(t), cycles(t)
	rng := scenarioRand(s, name)
	t.Logf("scenario %q: %d cycles, seed %d (%s=%d replays its fault moments)", name, n, s, envSeed, s)
	if tg.create != nil {
		tg.create(t, table)
	} else {
		tg.api.MustOpsSQL(t, tg.opKey, gatewaybin.DefaultTenant, fmt.Sprintf(tg.ddl, table))
	}

	l := newLedger()
	g := startLoad(t.Context(), tg.api, table, fmt.Sprintf("%s-%d", table, time.Now().UnixNano()), l)
	var once sync.Once
	stop := func() { once.Do(func() { g.stop(keyedStopBound) }) }
	t.Cleanup(func() { g.stopKeyed(); stop() })
	poll.Until(t, progressTimeout, "acknowledged ingest before the first fault", func() bool {
		return l.acknowledged() >= progressRequests
	})
	for c := range n {
		d := between(rng, minFaultDelay, maxFaultDelay)
		wait(t, d)
		start := time.Now()
		f.inject(t, rng)
		mark := l.acknowledged()
		poll.Until(t, progressTimeout, fmt.Sprintf("acknowledged ingest after fault %d", c+1), func() bool {
			return l.acknowledged() >= mark+progressRequests
		})
		t.Logf("cycle %d: %s %s after the previous recovery, recovered in %s; %d requests acknowledged so far",
			c+1, f.name, d.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), l.acknowledged())
	}
	stop()
	drained, ok := waitDrained(t, tg.ops)
	if !ok {
		t.Errorf("the queue did not drain within %s: lag %v, ack pending %v; writer retries %v, settle failures %v",
			drainTimeout, drained.series(metricLag), drained.series(metricAckPending),
			drained.series("wavehouse_ingest_retries_total"), drained.series("wavehouse_ingest_settle_failures_total"))
		t.Logf("writer log tail:\n%s", tg.writerLog())
	}
	c := count(l.snapshot(), tg.read(t, table))
	doubt := tg.writer.total(t.Context())
	// A keyed request whose retries could not reach the key store until its mark lapsed is
	// enqueued again (docs/idempotency.md#limits); the api counts each such claim.
	lapsed := int(tg.reserves.total(t.Context())["mark_lapsed"])
	lapsedDup := c.KeyedDupReqs > 0 && c.KeyedDup == c.Duplicated && c.KeyedDupReqs <= lapsed
	t.Logf("%s: %s", name, c)
	t.Logf("%s: non-2xx answers by status (0: transport error) %v; %d keyed retries; DLQ entries %v; in-doubt batches %v; "+
		"the gateway reports insert dedup %v", name, l.statuses, l.retries, drained.sum(metricDLQ), doubt,
		drained.series(metricTableDedup, "table="+table))
	if c.UnknownDup > 0 {
		t.Logf("%s: %d rows of requests without a 2xx (each sent once) are stored more than once: not counted as duplicated", name, c.UnknownDup)
	}

	verdict := "pass"
	switch {
	case !ok:
		verdict = fmt.Sprintf("FAIL: not drained in %s", drainTimeout)
	case c.Lost > 0:
		verdict = "FAIL: loss"
	case lapsedDup:
		verdict = fmt.Sprintf("pass (at-least-once: %d keyed requests whose mark lapsed)", c.KeyedDupReqs)
	case c.Duplicated > 0 && tg.dedupes:
		verdict = "FAIL: duplicates"
	case c.Duplicated > 0:
		verdict = "pass (at-least-once)"
	}
	results.add(result{
		Scenario: name, Cycles: n, Seed: s, Acked: c.AckedRows, Lost: c.Lost, Duplicated: c.Duplicated,
		Dedupes: tg.dedupes, InDoubt: formatCounts(doubt), Verdict: verdict,
	})

	explain(t, l, tg, c)
	if c.Lost > 0 {
		t.Errorf("%d of %d acknowledged rows are not in ClickHouse (first requests missing rows: %v; DLQ entries %v; queue drained: %v)",
			c.Lost, c.AckedRows, c.lostExamples, drained.sum(metricDLQ), ok)
	}
	if c.Stray > 0 {
		t.Errorf("%d rows in ClickHouse belong to no request sent", c.Stray)
	}
	if c.GaveUp > 0 {
		t.Errorf("%d keyed requests were never acknowledged (last final refusal: %s)", c.GaveUp, l.lastErr)
	}
	if lapsedDup {
		t.Logf("%s: %d keyed requests (%d rows) stored twice, each after a retry claimed its key past the mark window (%s{outcome=\"mark_lapsed\"} %d): the documented limit",
			name, c.KeyedDupReqs, c.KeyedDup, metricReserve, lapsed)
	}
	if c.Duplicated > 0 && tg.dedupes && !lapsedDup {
		t.Errorf("%d acknowledged rows are stored more than once (%d extra rows) in a table that deduplicates: exactly once is promised here",
			c.Duplicated, c.DupExtra)
	}
	if c.Duplicated > 0 && !tg.dedupes && doubt["reinserted_not_deduplicated"] == 0 && !lapsedDup {
		t.Errorf("%d acknowledged rows are stored more than once, but neither %s{outcome=\"reinserted_not_deduplicated\"} nor (for keyed requests) %s{outcome=\"mark_lapsed\"} explains them (%d keyed requests twice, %d lapsed marks)",
			c.Duplicated, metricInDoubt, metricReserve, c.KeyedDupReqs, lapsed)
	}
	return ok
}

// formatCounts renders counts by outcome in a stable order ("-" when none).
func formatCounts(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %g", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// explain logs the history of the first requests whose rows are lost or duplicated: every
// attempt the client made, and the gateway's log lines naming those attempts.
func explain(t *testing.T, l *ledger, tg target, c tally) {
	t.Helper()
	if len(c.lostExamples)+len(c.dupExamples) == 0 {
		return
	}
	var out string
	if tg.logs != nil {
		out = tg.logs()
	}
	for _, set := range []struct {
		what string
		bs   []uint64
	}{{"rows lost", c.lostExamples}, {"rows stored more than once", c.dupExamples}} {
		for _, b := range set.bs {
			t.Logf("%s: %s\n  gateway log lines:\n%s", set.what, l.history(b), linesWith(out, fmt.Sprintf("chaos-%d-", b), 10, 30))
		}
	}
}

// linesWith returns the lines of out that contain substr: the first head and the last tail of
// them, so both the first attempt and the final ones show.
func linesWith(out, substr string, head, tail int) string {
	var lines []string
	for line := range strings.Lines(out) {
		if strings.Contains(line, substr) {
			lines = append(lines, "    "+strings.TrimRight(line, "\n"))
		}
	}
	if len(lines) == 0 {
		return "    (none)"
	}
	if len(lines) > head+tail {
		left := len(lines) - head - tail
		lines = append(lines[:head:head], append([]string{fmt.Sprintf("    … %d lines left out …", left)}, lines[len(lines)-tail:]...)...)
	}
	return strings.Join(lines, "\n")
}
