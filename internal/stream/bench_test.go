package stream_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/stream"
)

// latencyWriter is a subscriber's ResponseWriter: for every row it sees,
// it records the time from acceptance (carried in the row's "at" column)
// to the write.
type latencyWriter struct {
	header http.Header
	rows   atomic.Int64
	lat    []time.Duration // written by the handler goroutine only
}

func (w *latencyWriter) Header() http.Header { return w.header }
func (w *latencyWriter) WriteHeader(int)     {}
func (w *latencyWriter) Flush()              {}

var atKey = []byte(`"at":`)

func (w *latencyWriter) Write(b []byte) (int, error) {
	now := time.Now().UnixNano()
	n := int64(0)
	for rest := b; ; {
		i := bytes.Index(rest, atKey)
		if i < 0 {
			break
		}
		rest = rest[i+len(atKey):]
		j := bytes.IndexAny(rest, ",}")
		at, err := strconv.ParseInt(string(rest[:j]), 10, 64)
		if err == nil && at > 1 { // warm-up rows carry 1
			w.lat = append(w.lat, time.Duration(now-at))
		}
		n++
	}
	w.rows.Add(n)
	return len(b), nil
}

// BenchmarkFanout100Subscribers publishes b.N records (durable publishes,
// sync=always) to one table with 100 live subscribers and reports the
// accept → written latency and the row deliveries per second. rate=1k
// publishes one-row records at 1,000 rows/s (the acceptance target);
// max publishes 100-row records from 8 publishers as fast as the queue
// takes them (capacity).
// Run: go test -run '^$' -bench Fanout -benchtime 10000x ./internal/stream/
func BenchmarkFanout100Subscribers(b *testing.B) {
	b.Run("rate=1k", func(b *testing.B) { benchFanout(b, embeddedmq.SyncAlways, 1000, 1) })
	// The same without fsync per publish separates the stream's own
	// latency from the disk's.
	b.Run("rate=1k/sync=interval", func(b *testing.B) { benchFanout(b, embeddedmq.SyncInterval, 1000, 1) })
	b.Run("max", func(b *testing.B) { benchFanout(b, embeddedmq.SyncAlways, 0, 100) })
}

func benchFanout(b *testing.B, sync string, rate, rowsPerRecord int) {
	const subscribers = 100
	q, err := embeddedmq.New(embeddedmq.Config{Dir: b.TempDir(), Partitions: 1, TenantMaxBytes: -1, Sync: sync}, embeddedmq.Deps{})
	if err != nil {
		b.Fatal(err)
	}
	if err := q.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = q.Close(context.Background()) }()
	svc, err := stream.New(stream.Config{MaxSubscribers: -1}, stream.Deps{Queue: q})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = svc.Close(context.Background()) }()
	writers := make([]*latencyWriter, subscribers)
	var stops []func()
	for i := range writers {
		writers[i] = &latencyWriter{header: http.Header{}, lat: make([]time.Duration, 0, b.N*rowsPerRecord+64)}
		stop, _ := serveDirect(b, svc, "bench", writers[i])
		stops = append(stops, stop)
	}
	var pubMu gosync.Mutex
	var pubLat []time.Duration // durable publish latency, the share of the queue's fsync
	pub := func(at int64) error {
		rows := make([][]any, rowsPerRecord)
		for i := range rows {
			rows[i] = []any{i, at}
		}
		start := time.Now()
		_, err := q.Publish(context.Background(), mq.Record{Tenant: tenant, Table: "bench",
			Payload: encode(b, []string{"n", "at"}, rows...)})
		if at > 1 {
			pubMu.Lock()
			pubLat = append(pubLat, time.Since(start))
			pubMu.Unlock()
		}
		return err
	}
	// Warm up until every subscriber's live reader delivers.
	deadline := time.Now().Add(30 * time.Second)
	for !allAtLeast(writers, int64(rowsPerRecord)) {
		if err := pub(1); err != nil {
			b.Fatal(err)
		}
		if time.Now().After(deadline) {
			b.Fatal("subscribers did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Let warm-up deliveries settle, then count from here.
	deadline = time.Now().Add(30 * time.Second)
	base := make([]int64, len(writers))
	for settled := false; !settled; {
		time.Sleep(100 * time.Millisecond)
		settled = true
		for i, w := range writers {
			n := w.rows.Load()
			settled = settled && n == base[i]
			base[i] = n
		}
		if time.Now().After(deadline) {
			b.Fatal("warm-up deliveries did not settle")
		}
	}
	for _, w := range writers {
		w.lat = w.lat[:0]
	}

	b.ResetTimer()
	start := time.Now()
	var wg gosync.WaitGroup
	var failed atomic.Int64
	if rate > 0 {
		// Record i is due at start + i/rate; a pacer that fell behind
		// catches up at once, so the average rate holds on a loaded machine.
		for i := range b.N {
			if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
				time.Sleep(d)
			}
			wg.Go(func() {
				if err := pub(time.Now().UnixNano()); err != nil {
					failed.Add(1)
				}
			})
		}
	} else {
		var next atomic.Int64
		for range 8 {
			wg.Go(func() {
				for next.Add(1) <= int64(b.N) {
					if err := pub(time.Now().UnixNano()); err != nil {
						failed.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	deadline = time.Now().Add(60 * time.Second)
	for {
		done := true
		for i, w := range writers {
			done = done && w.rows.Load()-base[i] >= int64(b.N*rowsPerRecord)
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("not every subscriber received every row within 60s")
		}
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	for _, stop := range stops {
		stop()
	}
	if failed.Load() > 0 {
		b.Fatalf("%d publishes failed", failed.Load())
	}
	var all []time.Duration
	for _, w := range writers {
		all = append(all, w.lat...)
	}
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))]) / 1e6 }
	b.ReportMetric(pct(0.50), "p50_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "deliveries/s")
	slices.Sort(pubLat)
	b.ReportMetric(float64(pubLat[int(0.99*float64(len(pubLat)-1))])/1e6, "publish_p99_ms")
	b.ReportMetric(0, "ns/op")
	b.Log(fmt.Sprintf("%d rows x %d subscribers in %v: p50 %.2f ms, p99 %.2f ms, max %.2f ms", b.N*rowsPerRecord, subscribers, elapsed.Round(time.Millisecond), pct(0.5), pct(0.99), pct(1)))
}

func allAtLeast(ws []*latencyWriter, n int64) bool {
	for _, w := range ws {
		if w.rows.Load() < n {
			return false
		}
	}
	return true
}
