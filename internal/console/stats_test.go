package console

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestStatsRatesFromRegistry: the overview's rates are the counters' increase over the time
// between two samples, summed over labels; gauges are the last value; the hit ratio is hits over
// lookups of the interval, null without lookups.
func TestStatsRatesFromRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	accepted := prometheus.NewCounter(prometheus.CounterOpts{Name: mAccepted})
	inserted := prometheus.NewCounterVec(prometheus.CounterOpts{Name: mInserted}, []string{"tenant", "table"})
	batch := prometheus.NewHistogram(prometheus.HistogramOpts{Name: mBatchRows})
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: mRequests}, []string{"listener", "status_class"})
	hits := prometheus.NewCounterVec(prometheus.CounterOpts{Name: mCacheHits}, []string{"backend"})
	misses := prometheus.NewCounterVec(prometheus.CounterOpts{Name: mCacheMisses}, []string{"backend"})
	lag := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: mLag}, []string{"partition"})
	oldest := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: mOldest}, []string{"partition"})
	reg.MustRegister(accepted, inserted, batch, requests, hits, misses, lag, oldest)

	now := time.Unix(1000, 0)
	s := newSampler(reg, func() time.Time { return now }, time.Second, 3)
	first, err := s.stats()
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Series) != 0 {
		t.Fatalf("one sample gave %d points, want none", len(first.Series))
	}

	accepted.Add(20)
	inserted.WithLabelValues("acme", "events").Add(12)
	inserted.WithLabelValues("acme", "pages").Add(8)
	batch.Observe(15)
	batch.Observe(5)
	requests.WithLabelValues("api", "2xx").Add(4)
	requests.WithLabelValues("ops", "2xx").Add(100) // the ops listener is not the API's traffic
	requests.WithLabelValues("api", "4xx").Add(2)
	hits.WithLabelValues("memory").Add(3)
	misses.WithLabelValues("memory").Add(1)
	lag.WithLabelValues("0").Set(5)
	lag.WithLabelValues("1").Set(2)
	oldest.WithLabelValues("0").Set(1.5)
	oldest.WithLabelValues("1").Set(4)
	now = now.Add(2 * time.Second)
	st, err := s.stats()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Series) != 1 {
		t.Fatalf("%d points, want 1", len(st.Series))
	}
	p := st.Series[0]
	if p.AcceptedPerSec != 10 || p.InsertedPerSec != 10 || p.InsertsPerSec != 1 || p.RowsPerInsert != 10 ||
		p.Requests2xx != 2 || p.Requests4xx != 1 || p.QueueLag != 7 || p.OldestUnackedS != 4 ||
		p.CacheHitRatio == nil || *p.CacheHitRatio != 0.75 {
		t.Fatalf("point %+v (hit ratio %v)", p, p.CacheHitRatio)
	}
	if st.TableRates["acme/events"] != 6 || st.LastInsert["acme/pages"] != now.UnixMilli() {
		t.Fatalf("table rates %v, last insert %v", st.TableRates, st.LastInsert)
	}
	if st.Totals.Accepted != 20 || st.Totals.Requests["2xx"] != 4 {
		t.Fatalf("totals %+v", st.Totals)
	}

	// Within the minimum interval no new sample is taken; past it, the oldest beyond Keep go.
	now = now.Add(500 * time.Millisecond)
	if st, _ := s.stats(); len(st.Series) != 1 {
		t.Fatalf("a second ask within the interval added a point: %d", len(st.Series))
	}
	for range 3 {
		now = now.Add(time.Second)
		if _, err := s.stats(); err != nil {
			t.Fatal(err)
		}
	}
	st, _ = s.stats()
	if len(st.Series) != 2 || st.Series[1].CacheHitRatio != nil || st.Series[1].AcceptedPerSec != 0 {
		t.Fatalf("after idle samples: %d points, last %+v; want Keep-1 = 2 points with no lookups", len(st.Series), st.Series[len(st.Series)-1])
	}
}

// TestStatsMetricsAreDocumented: every family the console reads is in the metrics reference,
// so renaming a metric without the console fails here, not silently as a flat chart.
func TestStatsMetricsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range readMetrics {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("the console reads %s, which docs/metrics.md does not list", name)
		}
	}
}
