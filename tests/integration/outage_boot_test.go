package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

func (g *gateway) readyz(t *testing.T) gatewaybin.Readiness {
	t.Helper()
	return g.proc.Readyz(t)
}

// TestBootDuringClickHouseOutage restarts the gateway while its ClickHouse server is down. In
// its first life the gateway reads the table's schema (kept in the queue's schema bucket); the
// second life boots without ClickHouse, reports the store degraded on /readyz while staying
// ready, accepts valid rows (202) and rejects invalid ones row by row (400) against the kept
// schema, answers 503 with Retry-After for a table it never saw, for queries and for operator
// SQL; once ClickHouse is back on the same data directory, every accepted row lands exactly once
// and /readyz recovers.
func TestBootDuringClickHouseOutage(t *testing.T) {
	t.Parallel()
	ch := testsvc.StartClickHouse(t)
	db := testsvc.UniqueName(t, "whit")
	if _, err := ch.Query(t.Context(), "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gatewayConfig{Store: storeClickHouse, MQ: mqEmbedded, CHAddr: ch.NativeAddr, CHHTTPAddr: ch.HTTPAddr, CHDatabase: db})
	r := readerFor(g)
	const table = "known"
	g.sql(t, "CREATE TABLE "+table+" (id String, n UInt64, note Nullable(String)) ENGINE = MergeTree() ORDER BY id")
	ndjson := func(prefix string, n int) []byte {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "{\"id\":\"%s%d\",\"n\":%d}\n", prefix, i, i)
		}
		return []byte(b.String())
	}

	// First life: the schema is read (and kept), rows land.
	if resp := g.ingest(t, table, "", ctNDJSON, ndjson("a", 5)); resp.Status != http.StatusAccepted {
		t.Fatalf("first life ingest: %s", resp)
	}
	poll.Until(t, 60*time.Second, "first life's rows in ClickHouse", func() bool { return count(t, r, table) == 5 })
	if rz := g.readyz(t); rz.Code != http.StatusOK || rz.Status != "ok" || len(rz.Degraded) != 0 {
		t.Fatalf("/readyz with ClickHouse up: %d %+v", rz.Code, rz)
	}
	if code := g.proc.Stop(t); code != 0 {
		t.Fatalf("first life exited %d", code)
	}

	// Second life, ClickHouse down.
	ch.Stop(t)
	g.start(t) // waits for /readyz 200: the process must boot and stay ready
	rz := g.readyz(t)
	if rz.Code != http.StatusOK || !rz.Ready || rz.Status != "degraded" || !strings.HasPrefix(rz.Degraded["store"], "unavailable") {
		t.Fatalf("/readyz booted with ClickHouse down: %d %+v, want 200 degraded with store unavailable", rz.Code, rz)
	}
	if resp := g.ingest(t, table, "", ctNDJSON, ndjson("b", 10)); resp.Status != http.StatusAccepted {
		t.Fatalf("valid rows with ClickHouse down: %s, want 202", resp)
	}
	bad := []byte(`{"id":"c0","n":1}` + "\n" + `{"id":"c1","n":"many"}` + "\n" + `{"id":"c2","n":2,"colour":"red"}` + "\n")
	resp := g.ingest(t, table, "", ctNDJSON, bad)
	var e apiError
	resp.JSON(t, &e)
	if resp.Status != http.StatusBadRequest || e.Code != "ingest.invalid_rows" || e.Details.Rejected != 2 || len(e.Details.Errors) != 2 {
		t.Fatalf("invalid rows with ClickHouse down: %s, want 400 ingest.invalid_rows with 2 row errors", resp)
	}
	if got := e.Details.Errors; got[0].Row != 1 || got[0].Column != "n" || got[1].Row != 2 || got[1].Column != "colour" {
		t.Fatalf("row errors %+v, want row 1 column n and row 2 column colour", got)
	}
	unavailable := func(what string, status int, code, retryAfter string) {
		t.Helper()
		if status != http.StatusServiceUnavailable || code != "store.unavailable" || retryAfter == "" {
			t.Errorf("%s with ClickHouse down: %d %q Retry-After %q, want 503 store.unavailable with Retry-After", what, status, code, retryAfter)
		}
	}
	resp = g.ingest(t, "never_seen", "", ctNDJSON, ndjson("d", 1))
	unavailable("ingest into a table never seen", resp.Status, resp.Code(), resp.Header.Get("Retry-After"))
	resp = g.client.Do(t, http.MethodPost, "/v1/query", http.Header{"Content-Type": {ctJSON}}, []byte(`{"sql":"SELECT count() FROM `+table+`"}`))
	unavailable("query", resp.Status, resp.Code(), resp.Header.Get("Retry-After"))
	resp = g.client.OpsSQL(t, g.operatorKey(t), gatewaybin.DefaultTenant, "CREATE TABLE other (id String) ENGINE = Memory")
	unavailable("operator SQL", resp.Status, resp.Code(), resp.Header.Get("Retry-After"))

	// ClickHouse returns on the same data directory: the backlog drains, exactly once.
	ch.Start(t)
	poll.Until(t, 90*time.Second, "the outage's rows in ClickHouse", func() bool { return count(t, r, table) >= 15 })
	poll.Until(t, 30*time.Second, "/readyz to recover", func() bool { rz := g.readyz(t); return rz.Code == http.StatusOK && rz.Status == "ok" })
	rows := r.selectRows(t, "SELECT toString(count()) AS total, toString(uniqExact(id)) AS uniq, toString(countIf(id LIKE 'c%')) AS bad FROM {table}", table)
	if rows[0]["total"] != "15" || rows[0]["uniq"] != "15" || rows[0]["bad"] != "0" {
		t.Fatalf("table holds %v, want 15 rows, 15 distinct ids, none of the rejected request", rows[0])
	}
	if n := dlqCount(t, g, table); n != 0 {
		t.Fatalf("DLQ holds %d entries after the outage, want 0", n)
	}
}
