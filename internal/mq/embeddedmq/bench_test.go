package embeddedmq_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
)

// BenchmarkDurablePublish measures durable single-record publishes under
// sync: always with 1, 16 and 64 concurrent publishers: "naive" stores one
// JetStream message per publish (the baseline), "groupcommit" is
// Queue.Publish. Metrics: publishes/s and publish latency p50/p99 in ms.
//
//	go test -run '^$' -bench DurablePublish -benchtime 20000x ./internal/mq/embeddedmq/
func BenchmarkDurablePublish(b *testing.B) {
	payload := []byte(`{"ts":"2026-11-29T09:00:00Z","user_id":123456789,"event":"page_view","path":"/products/42","ref":"https://example.com/","ua":"Mozilla/5.0 (X11; Linux x86_64)","n":1}`)
	for _, mode := range []string{"naive", "groupcommit"} {
		for _, pubs := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/publishers=%d", mode, pubs), func(b *testing.B) {
				q := open(b, embeddedmq.Config{Dir: b.TempDir(), Sync: embeddedmq.SyncAlways, Partitions: 1, TenantMaxBytes: -1})
				jq, err := q.Handle.Queue()
				if err != nil {
					b.Fatal(err)
				}
				js := jq.JetStream()
				subject := jq.Names().Subject("bench", "events")
				publish := func(ctx context.Context) error {
					if mode == "naive" {
						_, err := js.Publish(ctx, subject, payload)
						return err
					}
					_, err := q.Publish(ctx, mq.Record{Tenant: "bench", Table: "events", Payload: payload})
					return err
				}
				lat := make([][]time.Duration, pubs)
				var next atomic.Int64
				var failed atomic.Value
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for w := 0; w < pubs; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(1) <= int64(b.N) {
							t0 := time.Now()
							if err := publish(context.Background()); err != nil {
								failed.Store(err)
								return
							}
							lat[w] = append(lat[w], time.Since(t0))
						}
					}()
				}
				wg.Wait()
				el := time.Since(start)
				b.StopTimer()
				if err, ok := failed.Load().(error); ok {
					b.Fatal(err)
				}
				all := slices.Concat(lat...)
				slices.Sort(all)
				pct := func(p float64) float64 {
					return float64(all[int(float64(len(all)-1)*p)]) / float64(time.Millisecond)
				}
				b.ReportMetric(float64(b.N)/el.Seconds(), "publishes/s")
				b.ReportMetric(pct(0.50), "p50_ms")
				b.ReportMetric(pct(0.99), "p99_ms")
			})
		}
	}
}
