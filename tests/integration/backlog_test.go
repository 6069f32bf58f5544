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

	"github.com/wavehouse/wavehouse/internal/testutil/knob"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// backlogBytes is how much TestBacklogDrainsOnce queues while ClickHouse is down
// (WH_TEST_BACKLOG_BYTES; default 128 MiB, enough to drain for several ack waits; the W10
// acceptance run uses 1 GiB and more).
func backlogBytes(t *testing.T) int64 {
	t.Helper()
	return knob.Int(t, "WH_TEST_BACKLOG_BYTES", 128<<20, 1)
}

// flushMaxRows is ingest.flush.max_rows for TestBacklogDrainsOnce (WH_TEST_BACKLOG_FLUSH_ROWS; 0
// keeps the default), to compare batch sizes in a measurement run.
func flushMaxRows(t *testing.T) int {
	t.Helper()
	return int(knob.Int(t, "WH_TEST_BACKLOG_FLUSH_ROWS", 0, 0))
}

// backlogDDL is the table shape of the W10/W13 measurements.
const backlogDDL = "CREATE TABLE %s (id UInt64, name String, score Float64, ts DateTime) ENGINE = MergeTree() ORDER BY id"

func backlogRow(b *strings.Builder, id uint64) {
	fmt.Fprintf(b, "{\"id\":%d,\"name\":\"user-%d\",\"score\":%d.25,\"ts\":\"2026-12-01 10:%02d:%02d\"}\n", id, id%9973, id%1000, id/60%60, id%60)
}

// TestBacklogDrainsOnce fills the embedded queue while ClickHouse is down, then starts the server
// again: every acknowledged row lands exactly once although the drain takes many ack waits (the
// writer keeps the frames it holds alive instead of letting them be redelivered and inserted
// again), nothing is dead-lettered, and the drain rate is reported next to the rate of inserting
// the same rows straight into ClickHouse with clickhouse-go. WH_TEST_BACKLOG_MIN_RATIO, when
// set, is the drain/direct ratio the run must reach (a measurement run, not part of make test).
func TestBacklogDrainsOnce(t *testing.T) {
	ch := testsvc.StartClickHouse(t)
	db := testsvc.UniqueName(t, "whbl")
	if _, err := ch.Query(t.Context(), "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	const ackWait = "3s"
	g := startGateway(t, gatewayConfig{Store: storeClickHouse, MQ: mqEmbedded, CHAddr: ch.NativeAddr, CHHTTPAddr: ch.HTTPAddr,
		CHDatabase: db, UnboundedQueue: true, AckWait: ackWait, FlushMaxWait: "1s", FlushMaxRows: flushMaxRows(t)})
	r := readerFor(g)
	const table = "backlog"
	g.sql(t, fmt.Sprintf(backlogDDL, table))
	direct := directInsertRate(t, ch, db)
	t.Logf("direct clickhouse-go inserts: %.0f rows/s", direct)

	// One row first, so the table's schema is known when the server goes away.
	var first strings.Builder
	backlogRow(&first, 1<<62)
	if resp := g.ingest(t, table, "", ctNDJSON, []byte(first.String())); resp.Status/100 != 2 {
		t.Fatalf("first row: %s", resp)
	}
	poll.Until(t, 30*time.Second, "the first row inserted", func() bool { return count(t, r, table) == 1 })

	ch.Stop(t)
	target := backlogBytes(t)
	var sent, acked, refused atomic.Int64
	var firstRefusal atomic.Value
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	const clients, rowsPerRequest = 8, 1000
	for w := range clients {
		wg.Go(func() {
			for seq := 0; ctx.Err() == nil && sent.Load() < target && refused.Load() == 0; seq++ {
				var b strings.Builder
				base := uint64(w)<<40 | uint64(seq)*rowsPerRequest
				for j := range rowsPerRequest {
					backlogRow(&b, base+uint64(j))
				}
				body := []byte(b.String())
				resp, err := g.client.Try(ctx, http.MethodPost, "/v1/ingest/"+table, http.Header{"Content-Type": {ctNDJSON}}, body)
				switch {
				case err != nil:
					if ctx.Err() == nil {
						refused.Add(1)
						firstRefusal.CompareAndSwap(nil, err.Error())
					}
				case resp.Status/100 == 2:
					acked.Add(rowsPerRequest)
					sent.Add(int64(len(body)))
				default:
					refused.Add(1)
					firstRefusal.CompareAndSwap(nil, resp.String())
				}
			}
		})
	}
	wg.Wait()
	cancel()
	if n := refused.Load(); n > 0 {
		t.Fatalf("%d ingest requests were refused while ClickHouse was down; first: %v", n, firstRefusal.Load())
	}
	want := int(acked.Load()) + 1
	t.Logf("queued %d MiB (%d rows) while ClickHouse was down", sent.Load()>>20, want)

	ch.Start(t)
	start := time.Now()
	var firstInsert time.Time // the first backlog row visible: the server is up and the breaker closed
	drain := 10*time.Minute + time.Duration(want/20_000)*time.Second
	poll.Until(t, drain, "the backlog drained", func() bool {
		n := count(t, r, table)
		if n > 1 && firstInsert.IsZero() {
			firstInsert = time.Now()
		}
		return n >= want
	})
	elapsed, inserting := time.Since(start), time.Since(firstInsert)
	stats := r.selectRows(t, "SELECT toString(count()) AS total, toString(uniqExact(id)) AS uniq FROM {table}", table)
	total, _ := strconv.Atoi(stats[0]["total"].(string))
	uniq, _ := strconv.Atoi(stats[0]["uniq"].(string))
	if total != want || uniq != want {
		t.Fatalf("table holds %d rows, %d distinct, for %d acknowledged: every row must land exactly once", total, uniq, want)
	}
	if n := dlqCount(t, g, table); n != 0 {
		t.Fatalf("DLQ holds %d entries after the drain, want 0", n)
	}
	if n := gatewaybin.MetricSum(t, g.proc.OpsURL(), "wavehouse_ingest_redelivered_while_held_total"); n != 0 {
		t.Fatalf("%v frames were delivered again while the writer held them", n)
	}
	rate := float64(want) / elapsed.Seconds()
	t.Logf("drained %d rows in %s from the server's start (%s from the first insert): %.0f rows/s; direct clickhouse-go inserts of the same rows: %.0f rows/s; ratio %.2f",
		want, elapsed.Round(time.Millisecond), inserting.Round(time.Millisecond), rate, direct, rate/direct)
	if s := os.Getenv("WH_TEST_BACKLOG_MIN_RATIO"); s != "" {
		minRatio, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("WH_TEST_BACKLOG_MIN_RATIO=%q: %v", s, err)
		}
		if rate/direct < minRatio {
			t.Fatalf("drain/direct ratio %.2f below %.2f", rate/direct, minRatio)
		}
	}
}

// directInsertRate inserts 1M rows of the backlog shape into a scratch table of db with
// clickhouse-go batches of 10,000 rows (what the writer sends) and returns rows per second.
func directInsertRate(t *testing.T, ch *testsvc.ClickHouseProcess, db string) float64 {
	t.Helper()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{ch.NativeAddr}, Auth: clickhouse.Auth{Database: db}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := t.Context()
	if err := conn.Exec(ctx, fmt.Sprintf(backlogDDL, "direct")); err != nil {
		t.Fatal(err)
	}
	const rows, batch = 1_000_000, 10_000
	ts := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	start := time.Now()
	for i := 0; i < rows; i += batch {
		b, err := conn.PrepareBatch(ctx, "INSERT INTO direct (id, name, score, ts)")
		if err != nil {
			t.Fatal(err)
		}
		for j := i; j < i+batch; j++ {
			id := uint64(j)
			if err := b.Append(id, fmt.Sprintf("user-%d", id%9973), float64(id%1000)+0.25, ts.Add(time.Duration(id%3600)*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Send(); err != nil {
			t.Fatal(err)
		}
	}
	return rows / time.Since(start).Seconds()
}
