package idempotency

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/api"
	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// TestLostCommitResolvedAfterTheWindow: the all-embedded gateway answers a keyed request 202
// and dies before that request's idempotency commit is durable (the fault build's
// --fault-kill-after=commit_lost: the commit is skipped, as a crash takes an unsynced one, the
// answer is flushed, then SIGKILL; docs/adr/0017), and the retry comes only after the queue's
// 2-minute duplicate window, where the frame's message id no longer tells anything. The
// restarted gateway resolved the claim's mark from the stored frame at boot, so the retry gets
// the original answer (same position, not a second one), and every key and row is enqueued and
// stored once.
func TestLostCommitResolvedAfterTheWindow(t *testing.T) {
	g := newGateway(t, backends{}, func(c *gatewayConfig) { c.Lease = "2s" })
	const table = "lostcommit"
	g.sql(t, fmt.Sprintf(dedupDDL, table))
	const lostAt = 5
	g.proc.Stop(t)
	g.proc.SetArgs(fmt.Sprintf("--fault-kill-after=%s:%d", api.FaultCommitLost, lostAt))
	g.proc.Start(t)
	run := testUniqueSuffix()
	key := func(i int) string { return fmt.Sprintf("lost-%s-%d", run, i) }
	body := func(i int) []byte { return requestRows("l", i) }
	answers := make([]gatewaybin.Response, lostAt)
	for i := range lostAt {
		r, err := g.ingest(t.Context(), table, key(i), "", body(i))
		if err != nil || r.Status != http.StatusAccepted {
			t.Fatalf("request %d: %s, %v; want 202 (the %d-th is answered before the kill)", i, r, err, lostAt)
		}
		answers[i] = r
	}
	g.proc.MustExit(t, 30*time.Second)
	started := time.Now()
	g.proc.SetArgs()
	g.proc.Start(t)

	// The mark's FrameUntil is the duplicate window after it was written, before the kill.
	if wait := 2*time.Minute + 5*time.Second - time.Since(started); wait > 0 {
		t.Logf("waiting %v, past the duplicate window", wait.Round(time.Second))
		time.Sleep(wait)
	}
	var rc retryCounts
	lost := lostAt - 1
	r, err := sendUntilSettled(t.Context(), g, table, key(lost), body(lost), &rc)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != http.StatusAccepted || !bytes.Equal(r.Body, answers[lost].Body) {
		t.Fatalf("retry after the window: %s, want the original answer %s", r, answers[lost])
	}
	want := lostAt * rowsPerKilledRequest
	g.settled(t, table, want)
	s := g.stats(t, table)
	g.proc.Stop(t)
	q := readQueue(t, g, table)
	q.requireOnce(t, lostAt, "l")
	if s.Distinct != want || s.Total != want {
		t.Errorf("ClickHouse holds %d rows, %d distinct; want %d once each", s.Total, s.Distinct, want)
	}
}
