package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// refusals keeps the first answer that was not a 2xx.
type refusals struct {
	mu    sync.Mutex
	n     int
	first string
}

func (r *refusals) add(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		r.first = what
	}
	r.n++
}

func (r *refusals) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// TestSustainedIngestOverTheStreamBound: an all-in-one gateway on the embedded queue whose
// partition streams hold 16 MiB takes a paced ingest of three times that, all into one table (one
// partition stream), without one refusal, and every accepted row is in the table once. Inserted
// history cannot fill the stream: the sweeper trims it by size, long before
// stream.history_window (24 h). sweeper.interval is 1 s, so the fit check runs every second;
// the load (about 0.8 MB/s) stays far under the 8 MiB a stream has free after a check, and the
// minimum history (twice mq.ack_wait: 6 s) under half the stream. Idempotency keys are on (the
// default), so the sweeper keeps a resolve window (the duplicate window plus 5 min plus
// ingest.wait_timeout with the local dedupe store), far more than 16 MiB at this rate, but only
// from its first keyed frame on: the requests carry no Idempotency-Key, so none is kept for it.
func TestSustainedIngestOverTheStreamBound(t *testing.T) {
	const (
		bound    = 16 << 20
		workers  = 4
		rows     = 50                    // per request
		pace     = 60 * time.Millisecond // between two requests of a worker: about 0.8 MB/s in all
		deadline = 3 * time.Minute
	)
	g := backendGateway(t, storeCHDB, mqEmbedded, func(c *gatewayConfig) {
		c.StreamMaxBytes = bound
		c.SweeperInterval = "1s"
		c.AckWait = "3s"
	})
	const table = "bounded"
	g.sql(t, "CREATE TABLE "+table+" (id String, n UInt64, pad String) ENGINE = MergeTree() ORDER BY id")

	// stop ends the load between requests: a request in flight is answered, so every row sent is
	// either acknowledged or refused.
	stop, cancel := context.WithCancel(t.Context())
	defer cancel()
	acks := &ackLog{ids: map[string]struct{}{}}
	var refused refusals
	var wg sync.WaitGroup
	pad := strings.Repeat("p", 200)
	for w := range workers {
		wg.Go(func() {
			tick := time.NewTicker(pace)
			defer tick.Stop()
			for seq := 0; stop.Err() == nil; seq++ {
				ids := make([]string, rows)
				var b strings.Builder
				for j := range ids {
					ids[j] = fmt.Sprintf("w%d-%d-%d", w, seq, j)
					fmt.Fprintf(&b, "{\"id\":%q,\"n\":%d,\"pad\":%q}\n", ids[j], seq, pad)
				}
				resp, err := g.client.Try(t.Context(), http.MethodPost, "/v1/ingest/"+table, http.Header{"Content-Type": {ctNDJSON}}, []byte(b.String()))
				switch {
				case err != nil:
					refused.add(err.Error())
				case !resp.OK():
					refused.add(resp.String())
				default:
					acks.add(ids)
				}
				select {
				case <-stop.Done():
				case <-tick.C:
				}
			}
		})
	}
	ops := g.proc.OpsURL()
	published := func() float64 { return gatewaybin.MetricSum(t, ops, "wavehouse_mq_frame_bytes_sum") }
	poll.Until(t, deadline, "three stream bounds of frames published, or a refusal", func() bool {
		return published() >= 3*bound || refused.count() > 0
	})
	cancel()
	wg.Wait()
	if n := refused.count(); n > 0 {
		t.Fatalf("%d requests refused after %.1f MiB were published into a %d MiB stream; the first: %s",
			n, published()/(1<<20), bound>>20, refused.first)
	}
	if n := gatewaybin.MetricSum(t, ops, "wavehouse_sweeper_trimmed_frames_total"); n == 0 {
		t.Fatal("no frame was trimmed, so the stream never needed a trim: the test proves nothing")
	}

	r := readerFor(g)
	requireAllAcked(t, r, table, acks)
	acked, requests := acks.snapshot()
	rs := r.selectRows(t, "SELECT toString(count()) AS n, toString(uniqExact(id)) AS ids FROM {table}", table)
	if len(rs) != 1 || rs[0]["n"] != fmt.Sprint(acked) || rs[0]["ids"] != fmt.Sprint(acked) {
		t.Fatalf("the table holds %v, want n = ids = %d: the rows of %d accepted requests once each", rs, acked, requests)
	}
	t.Logf("%d rows in %d requests, %.1f MiB of frames published into a %d MiB stream", acked, requests, published()/(1<<20), bound>>20)
}
