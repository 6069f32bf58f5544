package tenants_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/knob"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// loadKnob reads a non-negative integer from the environment, or def.
func loadKnob(t testing.TB, name string, def int) int {
	t.Helper()
	return int(knob.Int(t, name, int64(def), 0))
}

// TestLimitsLoad is the load test of docs/tenants.md "Limits": tenant a, limited to 20
// requests/s, is hammered by many clients and gets 429s with Retry-After and RateLimit-*
// headers, gets no more answers than its rate allows, and tenant b, queried all the while, is
// never refused. It asserts no timing; how much a's overload slows b is measured by
// BenchmarkLimitsNeighbour.
//
// WH_TEST_LOAD_REQUESTS (b's sequential requests per phase, default 500 here, 5000 in the
// benchmark), WH_TEST_LOAD_CLIENTS (a's concurrent clients, default 16) and WH_TEST_LOAD_RATE
// (the requests/s a's clients offer together, default 2000, 100× its limit; 0: as fast as they
// can, which on a small box measures CPU saturation more than the limiter) tune both.
func TestLimitsLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: skipped with -short")
	}
	r := limitsLoad(t, max(loadKnob(t, "WH_TEST_LOAD_REQUESTS", 500), 1))
	t.Log(r.report)
}

// BenchmarkLimitsNeighbour runs TestLimitsLoad's scenario (and its assertions) and reports
// tenant b's p99 query latency unloaded and during tenant a's overload, and their ratio (target
// ≤ 2):
//
//	go test -run '^$' -bench BenchmarkLimitsNeighbour -benchtime 1x ./tests/tenants
func BenchmarkLimitsNeighbour(b *testing.B) {
	requests := max(loadKnob(b, "WH_TEST_LOAD_REQUESTS", 5000), 1)
	var r loadResult
	for range b.N {
		r = limitsLoad(b, requests)
	}
	b.ReportMetric(float64(r.p99Unloaded.Microseconds()), "b-p99-unloaded-µs")
	b.ReportMetric(float64(r.p99Loaded.Microseconds()), "b-p99-loaded-µs")
	b.ReportMetric(float64(r.p99Loaded)/float64(r.p99Unloaded), "p99-ratio")
	b.Log(r.report)
	fmt.Println("tenants load:", r.report)
}

// loadResult is what limitsLoad measured.
type loadResult struct {
	p99Unloaded, p99Loaded time.Duration
	report                 string
}

// limitsLoad runs the scenario with requests sequential queries of tenant b per phase, failing
// t when a is not refused as its limit says or b is refused at all.
func limitsLoad(t testing.TB, requests int) loadResult {
	t.Helper()
	clients := max(loadKnob(t, "WH_TEST_LOAD_CLIENTS", 16), 1)
	offered := loadKnob(t, "WH_TEST_LOAD_RATE", 2000)
	const rate = 20
	a := &tenant{Name: "a", Database: "tenant_a", Limits: fmt.Sprintf("{requests_per_second: %d, burst: %d}", rate, rate)}
	b := &tenant{Name: "b", Database: "tenant_b"}
	for _, tn := range []*tenant{a, b} {
		tn.Keys = []*apiKey{newKey(t, tn.Name, "admin", "admin", ""), newKey(t, tn.Name, "query", "ingest,query", "")}
	}
	g := startGateway(t, gatewayOptions{}, a, b)
	const sql = "SELECT count() AS n FROM events"
	for _, tn := range []*tenant{a, b} {
		g.sql(t, tn.key(t, "admin").Token, "", eventsDDL)
		if r := g.ingest(t, tn.key(t, "query").Token, "events", "wait=committed", `{"id":"seed","n":1}`); r.Status != http.StatusOK {
			t.Fatalf("seed row of tenant %s: %s", tn.Name, r)
		}
	}
	bKey := b.key(t, "query").Token
	measure := func(phase string, n int) []time.Duration {
		t.Helper()
		lat := make([]time.Duration, 0, n)
		for range n {
			start := time.Now()
			r := g.query(t, bKey, sql)
			lat = append(lat, time.Since(start))
			if r.Status != http.StatusOK {
				t.Fatalf("tenant b's query %s: %s, want 200", phase, r)
			}
		}
		return lat
	}
	measure("warm-up", 50)
	unloaded := measure("unloaded", requests)

	// a's overload: clients (each paced to its share of the offered rate) until b's second
	// phase is done.
	ctx, cancel := context.WithCancel(t.Context())
	var sent, accepted, refused atomic.Int64
	var sample gatewaybin.Response
	var sampleOnce sync.Once
	var wg sync.WaitGroup
	aKey := a.key(t, "query").Token
	began := time.Now()
	for range clients {
		wg.Go(func() {
			var tick <-chan time.Time
			if offered > 0 {
				tk := time.NewTicker(time.Duration(float64(time.Second) * float64(clients) / float64(offered)))
				defer tk.Stop()
				tick = tk.C
			}
			for ctx.Err() == nil {
				if tick != nil {
					select {
					case <-ctx.Done():
						return
					case <-tick:
					}
				}
				r, err := g.try(ctx, http.MethodPost, "/v1/query", aKey, []byte(`{"sql":"`+sql+`","format":"ndjson"}`))
				if err != nil {
					continue
				}
				sent.Add(1)
				switch r.Status {
				case http.StatusOK:
					accepted.Add(1)
				case http.StatusTooManyRequests:
					refused.Add(1)
					sampleOnce.Do(func() { sample = r })
				}
			}
		})
	}
	poll.Until(t, 30*time.Second, "tenant a's first 429", func() bool { return refused.Load() > 0 })
	loaded := measure("during a's overload", requests)
	cancel()
	wg.Wait()
	elapsed := time.Since(began)

	checkRefusal(t, "tenant a over its rate", sample, "limits.requests", rate)
	if most := int64(rate + rate*elapsed.Seconds() + 5); accepted.Load() > most {
		t.Errorf("tenant a got %d answers in %s under %d requests/s (burst %d), want at most %d", accepted.Load(), elapsed.Round(time.Millisecond), rate, rate, most)
	}
	p99u, p99l := percentile(unloaded, 0.99), percentile(loaded, 0.99)
	ratio := float64(p99l) / float64(p99u)
	report := fmt.Sprintf("tenant b p99 unloaded %s (p50 %s), during a's overload %s (p50 %s): ratio %.2f (target ≤ 2); "+
		"tenant a: %d clients offering %s, %d requests in %s (%.0f/s), %d answered, %d refused with 429",
		p99u.Round(time.Microsecond), percentile(unloaded, 0.5).Round(time.Microsecond),
		p99l.Round(time.Microsecond), percentile(loaded, 0.5).Round(time.Microsecond), ratio,
		clients, offeredText(offered), sent.Load(), elapsed.Round(time.Millisecond), float64(sent.Load())/elapsed.Seconds(), accepted.Load(), refused.Load())
	return loadResult{p99Unloaded: p99u, p99Loaded: p99l, report: report}
}

// percentile returns the q-quantile (nearest rank) of d.
func percentile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s))*q+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// offeredText describes a's offered rate.
func offeredText(rate int) string {
	if rate == 0 {
		return "all they can"
	}
	return fmt.Sprintf("%d requests/s", rate)
}
