package query_test

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/query"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// benchClients is the number of concurrent HTTP clients of BenchmarkQuery.
const benchClients = 32

// benchSQL is a dashboard-like aggregation over benchRows rows.
const (
	benchSQL  = "SELECT user, count() AS n, sum(big) AS s FROM events GROUP BY user ORDER BY user"
	benchRows = 100_000
)

// BenchmarkQuery compares, at 32 concurrent clients over HTTP, a cached query through the
// service (cache hit), the same query with ?cache=false (every request runs on ClickHouse
// 18.16 through the service), and the same query sent to ClickHouse's own HTTP interface.
// It reports p50/p99 latency and requests per second.
func BenchmarkQuery(b *testing.B) {
	ch := testsvc.ClickHouseServer(b)
	// Every client may wait for a slot: the benchmark measures throughput, not back-pressure.
	e := newEnv(b, clickhouseStore(b, ch.NativeAddr), nil, func(c *query.Config) { c.QueueWait = time.Minute })
	batch := store.Batch{Target: e.target, Table: "events", Columns: []string{"id", "user", "big"}}
	for i := range benchRows {
		batch.Rows = append(batch.Rows, fmt.Appendf(nil, `[%d,"user%d",%d]`, 1000+i, i%50, i))
	}
	if err := e.store.Insert(b.Context(), batch); err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * benchClients, MaxConnsPerHost: 2 * benchClients}}
	b.Cleanup(client.CloseIdleConnections)
	body := `{"sql":"` + benchSQL + `"}`
	cases := []struct {
		name      string
		url, body string
		want      string // the X-Cache value every answer must carry, if any
		clients   int
	}{
		{"cache_hit", e.srv.URL + "/v1/query", body, "HIT", benchClients},
		{"uncached", e.srv.URL + "/v1/query?cache=false", body, "BYPASS", benchClients},
	}
	if ch.HTTPAddr != "" {
		direct := "http://" + ch.HTTPAddr + "/?database=" + e.target.Database + "&default_format=JSON&readonly=1"
		cases = append(cases, struct {
			name, url, body, want string
			clients               int
		}{"clickhouse_direct", direct, benchSQL, "", benchClients})
	}
	// One client shows the latency of a hit without queueing behind 31 others on 2 cores.
	cases = append(cases, struct {
		name, url, body, want string
		clients               int
	}{"cache_hit_1_client", e.srv.URL + "/v1/query", body, "HIT", 1})
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			send := func() error {
				res, err := client.Post(c.url, "application/json", strings.NewReader(c.body))
				if err != nil {
					return err
				}
				defer res.Body.Close()
				if _, err := io.Copy(io.Discard, res.Body); err != nil {
					return err
				}
				if res.StatusCode != 200 || (c.want != "" && res.Header.Get("X-Cache") != c.want) {
					return fmt.Errorf("status %d X-Cache %q", res.StatusCode, res.Header.Get("X-Cache"))
				}
				return nil
			}
			if err := warm(send, c.want); err != nil {
				b.Fatal(err)
			}
			var (
				mu  sync.Mutex
				all []time.Duration
			)
			b.SetParallelism((c.clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			start := time.Now()
			if c.clients == 1 {
				for range b.N {
					t0 := time.Now()
					if err := send(); err != nil {
						b.Fatal(err)
					}
					all = append(all, time.Since(t0))
				}
			} else {
				b.RunParallel(func(pb *testing.PB) {
					var lat []time.Duration
					for pb.Next() {
						t0 := time.Now()
						if err := send(); err != nil {
							b.Error(err)
							return
						}
						lat = append(lat, time.Since(t0))
					}
					mu.Lock()
					all = append(all, lat...)
					mu.Unlock()
				})
			}
			elapsed := time.Since(start)
			b.StopTimer()
			if len(all) == 0 {
				return
			}
			slices.Sort(all)
			b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(len(all))/elapsed.Seconds(), "req/s")
		})
	}
}

// warm sends until an answer carries the wanted X-Cache state (the first request fills).
func warm(send func() error, want string) error {
	var err error
	for range 3 {
		if err = send(); err == nil {
			return nil
		}
	}
	return fmt.Errorf("warm-up (want X-Cache %q): %w", want, err)
}
