package split

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/testutil/knob"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/splitdeploy"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// Knobs of TestClusterIngestScaling: WH_SCALING_ROWS rows per run (0, the default, skips the
// test: it is a measurement, not a check), spread over scalingTables tables.
const (
	envScalingRows = "WH_SCALING_ROWS"
	scalingTables  = 16
	scalingBatch   = 1000 // rows per request
)

// TestClusterIngestScaling measures how fast 1, 2 and 4 ingest processes drain the same
// backlog into the 2 × 2 ClickHouse cluster (insert mode local, Distributed tables over
// ReplicatedMergeTree sharded by intHash64(id)), one run after the other. For each count a
// fresh split deployment (one api process, NATS JetStream with 4 partitions) first accepts the
// backlog with no ingest process running; then the ingest processes start, and the time until
// the Distributed tables count every row is taken twice: from the processes' start (boot,
// lease and consumer setup included) and from the first row landing. Every run requires every
// accepted row exactly once. docs/benchmarks.md records the numbers.
func TestClusterIngestScaling(t *testing.T) {
	total := int(knob.Int(t, envScalingRows, 0, 0))
	if total == 0 {
		t.Skipf("a measurement: set %s (e.g. 400000) to run it", envScalingRows)
	}
	c := testsvc.ClickHouseClusterServers(t)
	nats := testsvc.StartNATS(t)
	var report []string
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("ingest=%d", n), func(t *testing.T) {
			b := sharedBackends(t, []string{nats.URL}, 1)
			b.UseCluster(t, c, clickhousestore.InsertLocal)
			for i := range scalingTables {
				for _, node := range c.Nodes() {
					mustQuery(t, node, fmt.Sprintf("CREATE TABLE %[1]s.s%[2]d_local (id UInt64, s String) ENGINE = "+
						"ReplicatedMergeTree('/clickhouse/tables/{shard}/%[1]s.s%[2]d', '{replica}') ORDER BY id", b.Database, i))
					mustQuery(t, node, fmt.Sprintf("CREATE TABLE %[1]s.s%[2]d AS %[1]s.s%[2]d_local ENGINE = Distributed(%[3]s, %[1]s, s%[2]d_local, intHash64(id))",
						b.Database, i, c.Name))
				}
			}
			api := startProc(t, b, "api-1", "api")
			fillStart := time.Now()
			accepted := fill(t, api, total)
			filled := time.Since(fillStart)
			// The processes boot together (each waits for its own /readyz), so that none drains
			// the backlog alone while the others boot.
			start := time.Now()
			procs := make([]*splitdeploy.Proc, n)
			for i := range procs {
				procs[i] = splitdeploy.Prepare(t, binaryPath, b.Backends, fmt.Sprintf("ingest-%d", i+1), "ingest")
				procs[i].Process.Launch(t)
			}
			for _, p := range procs {
				p.WaitReady(t)
			}
			booted := time.Since(start)
			var first time.Duration
			poll.Until(t, 10*time.Minute, "every accepted row in the Distributed tables", func() bool {
				got := clusterCount(t, c, b.Database)
				if got > 0 && first == 0 {
					first = time.Since(start)
				}
				return got >= accepted
			})
			elapsed := time.Since(start)
			if got, distinct := clusterCount(t, c, b.Database), clusterDistinct(t, c, b.Database); got != accepted || distinct != accepted {
				t.Errorf("%d accepted rows: %d stored, %d distinct", accepted, got, distinct)
			}
			line := fmt.Sprintf("| %d | %d | %s (%.0fk rows/s) | %s | %s | %s | %.0fk | %.0fk |", n, accepted, filled.Round(10*time.Millisecond),
				float64(accepted)/filled.Seconds()/1000, booted.Round(10*time.Millisecond), first.Round(10*time.Millisecond),
				elapsed.Round(10*time.Millisecond), float64(accepted)/elapsed.Seconds()/1000, float64(accepted)/(elapsed-first).Seconds()/1000)
			t.Log(line)
			report = append(report, line)
		})
	}
	t.Logf("| ingest processes | rows | backlog accepted in | all processes ready | first row | all rows | rows/s from start | rows/s from first row |\n%s", strings.Join(report, "\n"))
}

// fill accepts total rows through api (4 clients, scalingBatch rows per request, the tables in
// turn) and returns how many were acknowledged.
func fill(t *testing.T, api *proc, total int) int {
	t.Helper()
	var (
		mu       sync.Mutex
		accepted int
		wg       sync.WaitGroup
		next     = make(chan int)
	)
	for range 4 {
		wg.Go(func() {
			var body strings.Builder
			for req := range next {
				body.Reset()
				for j := range scalingBatch {
					id := req*scalingBatch + j
					fmt.Fprintf(&body, "{\"id\":%d,\"s\":\"row %d\"}\n", id, id)
				}
				table := fmt.Sprintf("s%d", req%scalingTables)
				r, err := api.try(t.Context(), http.MethodPost, "/v1/ingest/"+table, "application/x-ndjson", []byte(body.String()))
				if err != nil || r.Status/100 != 2 {
					t.Errorf("ingest into %s: %v %v", table, err, r)
					continue
				}
				mu.Lock()
				accepted += scalingBatch
				mu.Unlock()
			}
		})
	}
	for req := range total / scalingBatch {
		next <- req
	}
	close(next)
	wg.Wait()
	return accepted
}

// clusterCount sums count() over the Distributed tables.
func clusterCount(t *testing.T, c *testsvc.ClickHouseCluster, db string) int {
	t.Helper()
	return clusterScalar(t, c, db, "count()")
}

// clusterDistinct sums the distinct ids per table over the Distributed tables (ids are unique
// across tables, so the sum is the number of distinct rows).
func clusterDistinct(t *testing.T, c *testsvc.ClickHouseCluster, db string) int {
	t.Helper()
	return clusterScalar(t, c, db, "uniqExact(id)")
}

func clusterScalar(t *testing.T, c *testsvc.ClickHouseCluster, db, agg string) int {
	t.Helper()
	var parts []string
	for i := range scalingTables {
		parts = append(parts, fmt.Sprintf("(SELECT %s FROM %s.s%d)", agg, db, i))
	}
	out := mustQuery(t, &c.Shards[0][0], "SELECT "+strings.Join(parts, " + "))
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("%s: %q", agg, out)
	}
	return n
}

func mustQuery(t *testing.T, n *testsvc.ClickHouse, sql string) string {
	t.Helper()
	out, err := n.Query(t.Context(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}
