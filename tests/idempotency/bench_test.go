package idempotency

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/knob"
)

// benchClients is the number of concurrent clients of BenchmarkIngest (WH_BENCH_IDEM_CLIENTS;
// default 32).
func benchClients(b *testing.B) int {
	b.Helper()
	return int(knob.Int(b, "WH_BENCH_IDEM_CLIENTS", 32, 1))
}

// BenchmarkIngest measures single-row ingest requests with and without an Idempotency-Key
// (each key new) on each dedupe backend's gateway: requests per second, p50 and p99 latency,
// and the share of answers that were not 202. Run it with
//
//	go test -run '^$' -bench BenchmarkIngest -benchtime 10s ./tests/idempotency/
func BenchmarkIngest(b *testing.B) {
	for _, m := range dedupeMatrix {
		b.Run(m.name, func(b *testing.B) {
			g := newGateway(b, m.b, nil)
			const table = "bench"
			g.sql(b, fmt.Sprintf(eventsDDL, table))
			var round atomic.Int64
			for _, keyed := range []bool{false, true} {
				name := "unkeyed"
				if keyed {
					name = "keyed"
				}
				b.Run(name, func(b *testing.B) {
					prefix := fmt.Sprintf("%s-%s-%d-", name, testUniqueSuffix(), round.Add(1))
					benchLoad(b, g, table, prefix, keyed, benchClients(b))
				})
			}
		})
	}
}

// benchLoad sends b.N single-row requests from clients goroutines and reports the numbers.
func benchLoad(b *testing.B, g *gateway, table, prefix string, keyed bool, clients int) {
	var (
		next   atomic.Int64
		failed atomic.Int64
		mu     sync.Mutex
		lat    = make([]time.Duration, 0, b.N)
		wg     sync.WaitGroup
	)
	b.ResetTimer()
	start := time.Now()
	for range clients {
		wg.Go(func() {
			own := make([]time.Duration, 0, b.N/clients+1)
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					break
				}
				key := ""
				if keyed {
					key = prefix + strconv.Itoa(i)
				}
				body := fmt.Appendf(nil, "{\"id\":\"%s%d\",\"n\":%d}\n", prefix, i, i)
				t0 := time.Now()
				r, err := g.ingest(b.Context(), table, key, "", body)
				own = append(own, time.Since(t0))
				if err != nil || r.Status != http.StatusAccepted {
					if failed.Add(1) == 1 {
						b.Logf("first failed request: %v %s", err, r)
					}
				}
			}
			mu.Lock()
			lat = append(lat, own...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(failed.Load())/float64(b.N), "non202/op")
	if b.N > 100 {
		b.Logf("N=%d: where the time goes (cumulative since boot):\n%s", b.N, g.metricSums(b))
	}
}

// metricSums returns the _sum and _count lines of the gateway's queue-publish and dedupe-call
// latency histograms.
func (g *gateway) metricSums(b *testing.B) string {
	r, err := g.client.HTTP.Get(g.proc.OpsURL() + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer r.Body.Close()
	raw, _ := io.ReadAll(r.Body)
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if (strings.HasPrefix(line, "wavehouse_mq_publish_duration_seconds_") || strings.HasPrefix(line, "wavehouse_dedupe_call_duration_seconds_") ||
			strings.HasPrefix(line, "wavehouse_ingest_request_duration_seconds_")) &&
			(strings.Contains(line, "_sum") || strings.Contains(line, "_count")) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
