package cachemetrics_test

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/cachemetrics"
	"github.com/wavehouse/wavehouse/internal/cache/localcache"
	"github.com/wavehouse/wavehouse/internal/testutil/metrictest"
)

// TestCountsHitsMissesFillsErrorsAndBytes scrapes the metrics after a miss, a fill, a hit
// through Get and View, and a lookup after Close.
func TestCountsHitsMissesFillsErrorsAndBytes(t *testing.T) {
	lc, err := localcache.New(localcache.Config{}, localcache.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	c, err := cachemetrics.Wrap(lc, "local", reg)
	if err != nil {
		t.Fatal(err)
	}
	viewer, ok := c.(cache.Viewer)
	if !ok {
		t.Fatal("the wrapped local cache lost View")
	}
	if _, ok := c.(cache.HealthReporter); !ok {
		t.Fatal("the wrapped cache does not report Health")
	}
	backend := map[string]string{"backend": "local"}
	value := func(name string) float64 { return metrictest.Value(t, reg, name, backend) }

	v, err := c.Versions(t.Context(), "acme", cache.Deps{Tables: []string{"events"}})
	if err != nil {
		t.Fatal(err)
	}
	key := cache.NewKey("acme", "SELECT 1", nil, v)
	if _, err := c.Get(t.Context(), key); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("Get before the fill = %v, want a miss", err)
	}
	if err := c.Set(t.Context(), key, []byte("one row"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if _, err := viewer.View(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if got := value("wavehouse_cache_misses_total"); got != 1 {
		t.Errorf("misses = %v, want 1", got)
	}
	if got := value("wavehouse_cache_fills_total"); got != 1 {
		t.Errorf("fills = %v, want 1", got)
	}
	if got := value("wavehouse_cache_hits_total"); got != 2 {
		t.Errorf("hits = %v, want 2 (Get and View)", got)
	}
	if got, want := value("wavehouse_cache_bytes"), float64(lc.Bytes()); got != want || got == 0 {
		t.Errorf("bytes = %v, want %v (nonzero)", got, want)
	}
	if err := c.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(t.Context(), key); !errors.Is(err, cache.ErrClosed) {
		t.Fatalf("Get after Close = %v", err)
	}
	if got := metrictest.Value(t, reg, "wavehouse_cache_errors_total", map[string]string{"backend": "local", "op": "get"}); got != 1 {
		t.Errorf("errors{op=get} = %v, want 1", got)
	}
	if got := value("wavehouse_cache_misses_total"); got != 1 {
		t.Errorf("misses after an error = %v, want still 1", got)
	}
}
