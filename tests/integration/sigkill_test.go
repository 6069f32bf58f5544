package integration

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/knob"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// killCycles is how many times TestSIGKILLUnderLoad kills the gateway (WH_TEST_KILL_CYCLES).
func killCycles(t *testing.T) int {
	return int(knob.Int(t, "WH_TEST_KILL_CYCLES", 5, 1))
}

// TestSIGKILLUnderLoad kills the gateway with SIGKILL during sustained ingest from several
// concurrent clients, restarts it on the same data dir, repeats, and then requires every row
// that got a 2xx to be in ClickHouse at least once (exact duplicates are counted and logged).
func TestSIGKILLUnderLoad(t *testing.T) {
	t.Parallel()
	for _, storeBackend := range []string{storeCHDB, storeClickHouse} {
		t.Run(storeBackend+"/"+mqEmbedded, func(t *testing.T) {
			g := backendGateway(t, storeBackend, mqEmbedded, nil)
			r := readerFor(g)
			const table = "killed"
			g.sql(t, "CREATE TABLE "+table+" (id String, worker UInt16, n UInt64) ENGINE = MergeTree() ORDER BY id")

			const clients, rowsPerRequest = 4, 20
			acks := &ackLog{ids: map[string]struct{}{}}
			cycles := killCycles(t)
			for cycle := range cycles {
				ctx, cancel := context.WithCancel(t.Context())
				var wg sync.WaitGroup
				for w := range clients {
					wg.Go(func() { loadClient(ctx, g, table, fmt.Sprintf("c%d-w%d", cycle, w), w, rowsPerRequest, acks) })
				}
				// Kill mid-load: once this cycle has had a fair number of acknowledged requests.
				_, before := acks.snapshot()
				poll.Until(t, 60*time.Second, "acknowledged requests under load", func() bool {
					_, n := acks.snapshot()
					return n-before >= 50
				})
				g.kill(t)
				cancel()
				wg.Wait()
				rows, reqs := acks.snapshot()
				t.Logf("cycle %d: killed after %d acknowledged requests in total (%d rows)", cycle, reqs, rows)
				g.start(t)
			}

			want, _ := acks.snapshot()
			requireAllAcked(t, r, table, acks)
			stats := r.selectRows(t, "SELECT toString(count()) AS total, toString(uniqExact(id)) AS uniq FROM {table}", table)
			total, _ := strconv.Atoi(stats[0]["total"].(string))
			uniq, _ := strconv.Atoi(stats[0]["uniq"].(string))
			t.Logf("%d kills: %d acknowledged rows, all present; table holds %d rows, %d distinct (%d exact duplicates, %d rows from unacknowledged requests)",
				cycles, want, total, uniq, total-uniq, uniq-want)
		})
	}
}
