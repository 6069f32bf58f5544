package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// outageDuration is how long TestClickHouseOutage keeps ClickHouse stopped
// (WH_TEST_CLICKHOUSE_OUTAGE, a Go duration; default 30s, the figure).
func outageDuration(t *testing.T) time.Duration {
	d := 30 * time.Second
	if s := os.Getenv("WH_TEST_CLICKHOUSE_OUTAGE"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil || v <= 0 {
			t.Fatalf("WH_TEST_CLICKHOUSE_OUTAGE=%q: want a positive Go duration", s)
		}
		d = v
	}
	return d
}

// TestClickHouseOutage stops a private ClickHouse server while clients keep ingesting: ingest
// keeps answering 2xx, /readyz reports the store degraded (still 200), and once the server is
// back every accepted row arrives, nothing was dead-lettered and /readyz recovers.
func TestClickHouseOutage(t *testing.T) {
	t.Parallel()
	ch := testsvc.StartClickHouse(t)
	db := testsvc.UniqueName(t, "whit")
	if _, err := ch.Query(t.Context(), "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gatewayConfig{Store: storeClickHouse, MQ: mqEmbedded, CHAddr: ch.NativeAddr, CHHTTPAddr: ch.HTTPAddr, CHDatabase: db})
	r := readerFor(g)
	const table = "outage"
	g.sql(t, "CREATE TABLE "+table+" (id String, n UInt64) ENGINE = MergeTree() ORDER BY id")

	acks := &ackLog{ids: map[string]struct{}{}}
	var refused atomic.Int64 // non-2xx answers while the gateway is up
	var firstRefusal atomic.Value
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for seq := 0; ctx.Err() == nil; seq++ {
				ids := make([]string, 10)
				var b strings.Builder
				for j := range ids {
					ids[j] = fmt.Sprintf("w%d-%d-%d", w, seq, j)
					fmt.Fprintf(&b, "{\"id\":%q,\"n\":%d}\n", ids[j], seq)
				}
				resp, err := g.client.Try(ctx, http.MethodPost, "/v1/ingest/"+table, http.Header{"Content-Type": {ctNDJSON}}, []byte(b.String()))
				switch {
				case err != nil:
					if ctx.Err() == nil {
						refused.Add(1)
						firstRefusal.CompareAndSwap(nil, err.Error())
					}
				case resp.Status/100 == 2:
					acks.add(ids)
				default:
					refused.Add(1)
					firstRefusal.CompareAndSwap(nil, resp.String())
				}
				// A steady trickle, not a flood: the queue holds the outage's rows.
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	}
	waitAcks := func(what string, n int) {
		_, before := acks.snapshot()
		poll.Until(t, 60*time.Second, what, func() bool { _, got := acks.snapshot(); return got-before >= n })
	}
	waitAcks("ingest before the outage", 20)
	poll.Until(t, 30*time.Second, "rows inserted before the outage", func() bool { return count(t, r, table) > 0 })

	ch.Stop(t)
	_, atStop := acks.snapshot()
	poll.Until(t, 20*time.Second, "/readyz to report the store degraded", func() bool {
		rz := g.readyz(t)
		return rz.Code == http.StatusOK && rz.Status == "degraded" && rz.Degraded["store"] != ""
	})
	down := outageDuration(t)
	t.Logf("ClickHouse stopped for %s", down)
	select {
	case <-time.After(down): // the outage itself is the behaviour under test, not a synchronisation
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	}
	_, atStart := acks.snapshot()
	ch.Start(t)
	waitAcks("ingest after the outage", 20)
	poll.Until(t, 30*time.Second, "/readyz to recover", func() bool { rz := g.readyz(t); return rz.Code == http.StatusOK && rz.Status == "ok" })
	cancel()
	wg.Wait()

	if n := refused.Load(); n > 0 {
		t.Fatalf("%d ingest requests were refused around the outage; first: %v", n, firstRefusal.Load())
	}
	if atStart-atStop < 10 {
		t.Fatalf("only %d requests were acknowledged during the outage", atStart-atStop)
	}
	want, reqs := acks.snapshot()
	t.Logf("%d requests (%d rows) acknowledged, %d during the outage", reqs, want, atStart-atStop)
	requireAllAcked(t, r, table, acks)
	if n := dlqCount(t, g, table); n != 0 {
		t.Fatalf("DLQ holds %d entries after the outage, want 0: %+v", n, dlqEntries(t, g, table))
	}
	if e := dlqEntries(t, g, table); len(e) != 0 {
		t.Fatalf("DLQ lists %d entries, want 0", len(e))
	}
	stats := r.selectRows(t, "SELECT toString(count()) AS total, toString(uniqExact(id)) AS uniq FROM {table}", table)
	total, _ := strconv.Atoi(stats[0]["total"].(string))
	uniq, _ := strconv.Atoi(stats[0]["uniq"].(string))
	t.Logf("table holds %d rows, %d distinct, for %d accepted (%d exact duplicates, %d rows from unacknowledged requests)",
		total, uniq, want, total-uniq, uniq-want)
}
