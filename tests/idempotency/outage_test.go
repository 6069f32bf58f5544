package idempotency

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestDedupeStoreDown stops the DynamoDB server under a running gateway and requires: keyed
// requests get 503 dedupe.unavailable with Retry-After and enqueue nothing; requests without a
// key are still accepted (202) and land in ClickHouse; once the server is back, keyed requests
// are accepted again and a key recorded before the outage is still replayed.
func TestDedupeStoreDown(t *testing.T) {
	dyn := testsvc.StartDynamoDB(t)
	g := newGateway(t, backends{Dedupe: "dynamodb"}, func(c *gatewayConfig) { c.DynamoURL = dyn.Endpoint })
	const table = "outage"
	g.sql(t, fmt.Sprintf(eventsDDL, table))
	run := testUniqueSuffix()

	before, err := g.ingest(t.Context(), table, "before-"+run, "", keyedBody("before", 0))
	if err != nil || before.Status != http.StatusAccepted {
		t.Fatalf("keyed request with the store up: %v %s", err, before)
	}

	dyn.Stop(t)
	const n = 10
	for i := range n {
		r, err := g.ingest(t.Context(), table, fmt.Sprintf("down-%s-%d", run, i), "", keyedBody("down", i))
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusServiceUnavailable || r.Code() != "dedupe.unavailable" {
			t.Fatalf("keyed request %d with the store down: %s, want 503 dedupe.unavailable", i, r)
		}
		if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("keyed request %d: Retry-After %q, want a positive number of seconds", i, r.Header.Get("Retry-After"))
		}
		u, err := g.ingest(t.Context(), table, "", "", keyedBody("plain", i))
		if err != nil {
			t.Fatal(err)
		}
		if u.Status != http.StatusAccepted {
			t.Fatalf("request %d without a key with the store down: %s, want 202", i, u)
		}
	}

	dyn.Start(t)
	var after gatewaybin.Response
	poll.Until(t, 60*time.Second, "a keyed request accepted after the store is back", func() bool {
		after, err = g.ingest(t.Context(), table, "after-"+run, "", keyedBody("after", 0))
		return err == nil && after.Status == http.StatusAccepted
	})
	again, err := g.ingest(t.Context(), table, "before-"+run, "", keyedBody("before", 0))
	if err != nil || again.Status != before.Status || string(again.Body) != string(before.Body) || !replayed(again) {
		t.Errorf("key recorded before the outage: %v %s (replayed=%v), want %s replayed", err, again, replayed(again), before)
	}

	// 2 rows before, 2 per unkeyed request, 2 after; none of the refused keyed requests.
	want := 2 + 2*n + 2
	g.settled(t, table, want)
	s := g.stats(t, table)
	if s.Total != want || s.Distinct != want {
		t.Errorf("table holds %d rows, %d distinct, want %d", s.Total, s.Distinct, want)
	}
	ids := g.ids(t, table)
	for i := range n {
		if id := fmt.Sprintf("down%d-a", i); ids[id] {
			t.Errorf("row %s of a request refused with 503 is in the table", id)
		}
		if id := fmt.Sprintf("plain%d-a", i); !ids[id] {
			t.Errorf("row %s of an accepted request without a key is missing", id)
		}
	}
}

// TestBootDuringDedupeOutage restarts the gateway while its DynamoDB server is down: the process
// boots (degraded, not dead) and stays ready, /readyz reports the dedupe store unavailable,
// keyed requests get 503 dedupe.unavailable and enqueue nothing while requests without a key are
// accepted; once the server is back, keyed requests are accepted, /readyz recovers, and every
// accepted row lands once.
func TestBootDuringDedupeOutage(t *testing.T) {
	dyn := testsvc.StartDynamoDB(t)
	g := newGateway(t, backends{Dedupe: "dynamodb"}, func(c *gatewayConfig) { c.DynamoURL = dyn.Endpoint })
	const table = "boot_outage"
	g.sql(t, fmt.Sprintf(eventsDDL, table))
	run := testUniqueSuffix()
	if r, err := g.ingest(t.Context(), table, "first-"+run, "", keyedBody("first", 0)); err != nil || r.Status != http.StatusAccepted {
		t.Fatalf("keyed request in the first life: %v %s", err, r)
	}
	if code := g.proc.Stop(t); code != 0 {
		t.Fatalf("first life exited %d", code)
	}

	dyn.Stop(t)
	g.proc.Start(t) // waits for /readyz 200: the process must boot without DynamoDB
	if rz := g.proc.Readyz(t); rz.Code != http.StatusOK || !rz.Ready || rz.Status != "degraded" || !strings.HasPrefix(rz.Degraded["dedupe"], "unavailable") {
		t.Fatalf("/readyz booted with DynamoDB down: %d %+v, want 200 degraded with dedupe unavailable", rz.Code, rz)
	}
	r, err := g.ingest(t.Context(), table, "down-"+run, "", keyedBody("down", 0))
	if err != nil || r.Status != http.StatusServiceUnavailable || r.Code() != "dedupe.unavailable" {
		t.Fatalf("keyed request booted without DynamoDB: %v %s, want 503 dedupe.unavailable", err, r)
	}
	if u, err := g.ingest(t.Context(), table, "", "", keyedBody("plain", 0)); err != nil || u.Status != http.StatusAccepted {
		t.Fatalf("request without a key booted without DynamoDB: %v %s, want 202", err, u)
	}

	dyn.Start(t)
	poll.Until(t, 60*time.Second, "a keyed request accepted after DynamoDB is back", func() bool {
		r, err := g.ingest(t.Context(), table, "after-"+run, "", keyedBody("after", 0))
		return err == nil && r.Status == http.StatusAccepted
	})
	poll.Until(t, 30*time.Second, "/readyz to recover", func() bool {
		rz := g.proc.Readyz(t)
		return rz.Code == http.StatusOK && rz.Status == "ok"
	})
	// 2 rows per accepted request: first, plain, after; none of the refused one.
	g.settled(t, table, 6)
	ids := g.ids(t, table)
	if ids["down0-a"] || !ids["plain0-a"] || !ids["after0-a"] || !ids["first0-a"] {
		t.Errorf("rows %v, want first, plain and after and not down", ids)
	}
}
