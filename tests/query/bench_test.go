package query_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/query"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// benchClients is the number of concurrent HTTP clients of BenchmarkQuery.
const benchClients = 32

// benchSQL is a dashboard-like aggregation over benchRows rows.
const (
	benchSQL  = "SELECT user, count() AS n, sum(big) AS s FROM events GROUP BY user ORDER BY user"
	benchRows = 100_000
)

// BenchmarkQuery measures, at 32 concurrent clients over HTTP on loopback, a cached query
// (cache hit), the same query with ?cache=false (every request runs on ClickHouse 18.16
// through the service), and the same query sent to ClickHouse's own HTTP interface, reporting
// p50/p99 latency and requests per second.
//
// What it measures, and why it is fair on a 2-core machine where the load generator and the
// gateway share the CPU:
//   - Every client is one keep-alive HTTP/1.1 connection (rawConn) sending a prebuilt request
//     and discarding the answer without allocating, so the clients cost a few microseconds a
//     request. With 32 closed-loop clients, latency is 32 / throughput (Little's law): every
//     microsecond the load generator burns is added to the gateway's latency. The *_nethttp
//     case keeps the former load generator (net/http's client, whose per-request cost is
//     several times the gateway's hit path) for comparison.
//   - The gateway answers through the same layers as the binary: httpx.Middleware (request
//     id, access log at info level, panic recovery) around the mux and query.Service. It runs
//     in this process (cases without a prefix), and as the real binary in its own process
//     (process/…), so the clients' Go scheduler and garbage collector do not run inside
//     the gateway's; the binary's routes add tenant resolution.
//   - Each answer is checked: status 200 and the X-Cache state the case names.
//
// cache_hit_1_client shows the latency of a hit without queueing behind 31 other clients.
//
// cache_hit_paced holds the 32 clients to a fixed aggregate rate (WH_BENCH_QUERY_RATE, default
// 8000 req/s, a sixth of what the machine sustains) instead of sending back to back: each client
// sends on its own schedule, and latency counts from the moment the request is written (the
// timer that wakes a client is the load generator's jitter, not the gateway's; the rate column
// shows whether the schedule was kept). It answers "what does a hit cost at 32 concurrent
// clients under a steady load", which a saturated closed loop cannot: there every request also
// waits for 31 others (p50 ≈ 32 / throughput).
func BenchmarkQuery(b *testing.B) {
	ch := testsvc.ClickHouseServer(b)
	e := newEnv(b, clickhouseStore(b, ch.NativeAddr), nil, func(d *query.Deps) {
		d.Limits = func(string) query.Limits { return query.Limits{CacheTTL: time.Hour} }
	})
	batch := store.Batch{Target: e.target, Table: "events", Columns: []string{"id", "user", "big"}}
	for i := range benchRows {
		batch.Rows = append(batch.Rows, fmt.Appendf(nil, `[%d,"user%d",%d]`, 1000+i, i%50, i))
	}
	if err := e.store.Insert(b.Context(), batch); err != nil {
		b.Fatal(err)
	}
	body := `{"sql":"` + benchSQL + `"}`
	cases := []benchCase{
		{name: "cache_hit", url: e.srv.URL + "/v1/query", body: body, want: "HIT", clients: benchClients},
		{name: "cache_hit_nethttp", url: e.srv.URL + "/v1/query", body: body, want: "HIT", clients: benchClients, netHTTP: true},
		{name: "uncached", url: e.srv.URL + "/v1/query?cache=false", body: body, want: "BYPASS", clients: benchClients},
	}
	if ch.HTTPAddr != "" {
		direct := "http://" + ch.HTTPAddr + "/?database=" + e.target.Database + "&default_format=JSON&readonly=1"
		cases = append(cases, benchCase{name: "clickhouse_direct", url: direct, body: benchSQL, clients: benchClients})
	}
	cases = append(cases, benchCase{name: "cache_hit_1_client", url: e.srv.URL + "/v1/query", body: body, want: "HIT", clients: 1},
		benchCase{name: "cache_hit_paced", url: e.srv.URL + "/v1/query", body: body, want: "HIT", clients: benchClients, rate: pacedRate(b)})
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) { runBenchCase(b, c) })
	}
	b.Run("process", func(b *testing.B) {
		api := startBenchGateway(b, ch.NativeAddr, e.target.Database)
		for _, c := range []benchCase{
			{name: "cache_hit", url: api + "/v1/query", body: body, want: "HIT", clients: benchClients},
			{name: "cache_hit_1_client", url: api + "/v1/query", body: body, want: "HIT", clients: 1},
			{name: "cache_hit_paced", url: api + "/v1/query", body: body, want: "HIT", clients: benchClients, rate: pacedRate(b)},
		} {
			b.Run(c.name, func(b *testing.B) { runBenchCase(b, c) })
		}
		b.Run("cache_hit_wrk", func(b *testing.B) { runWrk(b, api+"/v1/query", body, benchClients) })
	})
	b.Run("cache_hit_wrk", func(b *testing.B) { runWrk(b, e.srv.URL+"/v1/query", body, benchClients) })
}

// benchCase is one measured configuration of BenchmarkQuery.
type benchCase struct {
	name      string
	url, body string
	want      string // the X-Cache value every answer must carry, if any
	clients   int
	netHTTP   bool    // use net/http's client instead of rawConn
	rate      float64 // aggregate requests per second of paced clients; 0: closed loop
}

// pacedRate is the aggregate rate of the paced cases.
func pacedRate(b *testing.B) float64 {
	v := os.Getenv("WH_BENCH_QUERY_RATE")
	if v == "" {
		return 8000
	}
	var r float64
	if _, err := fmt.Sscan(v, &r); err != nil || r <= 0 {
		b.Fatalf("WH_BENCH_QUERY_RATE=%q: want a positive number", v)
	}
	return r
}

// runBenchCase drives c.clients closed-loop clients for b.N requests and reports p50, p99
// and requests per second.
func runBenchCase(b *testing.B, c benchCase) {
	var newClient func() (send func() error, done func())
	if c.netHTTP {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * benchClients, MaxConnsPerHost: 2 * benchClients}}
		b.Cleanup(client.CloseIdleConnections)
		newClient = func() (func() error, func()) {
			return func() error {
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
			}, func() {}
		}
	} else {
		newClient = func() (func() error, func()) {
			rc, err := newRawConn(c.url, "application/json", c.body)
			if err != nil {
				return func() error { return err }, func() {}
			}
			return func() error { return rc.do(c.want) }, rc.close
		}
	}
	send, done := newClient()
	err := warm(send, c.want)
	done()
	if err != nil {
		b.Fatal(err)
	}
	var (
		mu  sync.Mutex
		all []time.Duration
	)
	b.SetParallelism((c.clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU()
	if c.clients == 1 {
		send, done := newClient()
		defer done()
		all = make([]time.Duration, 0, b.N)
		for range b.N {
			t0 := time.Now()
			if err := send(); err != nil {
				b.Fatal(err)
			}
			all = append(all, time.Since(t0))
		}
	} else {
		b.RunParallel(func(pb *testing.PB) {
			send, done := newClient()
			defer done()
			lat := make([]time.Duration, 0, 1024)
			var interval time.Duration
			next := time.Now()
			if c.rate > 0 {
				interval = time.Duration(float64(c.clients) / c.rate * float64(time.Second))
				next = next.Add(time.Duration(rand.Int64N(int64(interval)))) // spread the clients
			}
			for pb.Next() {
				if interval > 0 {
					if d := time.Until(next); d > 0 {
						time.Sleep(d)
					}
					// A client that fell behind its schedule sends at once and keeps its pace
					// from now on, rather than bursting to catch up.
					if now := time.Now(); next.Before(now.Add(-interval)) {
						next = now
					}
					next = next.Add(interval)
				}
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
	elapsed, cpu := time.Since(start), processCPU()-cpu0
	b.StopTimer()
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "req/s")
	// CPU time of this process (clients, plus the gateway unless it runs in its own process)
	// per request: unlike latency it hardly depends on what else the machine runs.
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(all)), "cpu-µs/req")
}

// processCPU returns the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startBenchGateway builds the wavehouse binary (or takes WH_TEST_WAVEHOUSE_BIN) and runs it
// in its own process over the ClickHouse server at addr, with database as the default
// tenant's database, the embedded queue and the local cache. It returns the API's base URL.
func startBenchGateway(b *testing.B, addr, database string) string {
	bin, cleanup, err := gatewaybin.Build()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cleanup)
	dir := b.TempDir()
	cfg := fmt.Sprintf("server:\n  listen: 127.0.0.1:0\nops:\n  listen: 127.0.0.1:0\ndata_dir: %s\nlog:\n  level: info\n"+
		"store:\n  backend: clickhouse\n  clickhouse:\n    addrs: [%q]\n    database: %s\n"+
		"mq:\n  backend: embedded\n", filepath.Join(dir, "data"), addr, database)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	p := gatewaybin.StartProcess(b, gatewaybin.ProcessConfig{
		Name: "gateway", Binary: bin, Args: []string{"serve", "--config", cfgPath}, Dir: dir, ListenAddrs: true,
	})
	return p.APIURL()
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
