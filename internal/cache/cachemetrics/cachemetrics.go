// Package cachemetrics wraps a cache.Cache with Prometheus metrics: lookups that hit and miss,
// fills stored, and errors by operation, labelled by backend only (never by key or tenant), and
// the bytes the backend holds when it knows them. The circuit breaker's state is exported by
// the breaker itself (wavehouse_breaker_state{component="redis"}).
package cachemetrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/cache"
)

// Cache is a cache.Cache that records metrics around another.
type Cache struct {
	next    cache.Cache
	backend string

	hits, misses, fills prometheus.Counter
	errs                *prometheus.CounterVec
}

// viewCache adds View when the wrapped backend lends values, so the query path keeps its
// copy-free hits.
type viewCache struct {
	*Cache
	viewer cache.Viewer
}

var (
	_ cache.Cache          = (*Cache)(nil)
	_ cache.HealthReporter = (*Cache)(nil)
	_ cache.Viewer         = (*viewCache)(nil)
)

// byteCounter is implemented by backends that know the bytes they hold (localcache).
type byteCounter interface{ Bytes() int64 }

// Wrap registers the metrics with reg and returns next wrapped. The result implements
// cache.Viewer when next does.
func Wrap(next cache.Cache, backend string, reg prometheus.Registerer) (cache.Cache, error) {
	labels := prometheus.Labels{"backend": backend}
	c := &Cache{
		next:    next,
		backend: backend,
		hits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wavehouse_cache_hits_total", Help: "Result cache lookups that found an entry.", ConstLabels: labels,
		}),
		misses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wavehouse_cache_misses_total", Help: "Result cache lookups that found no entry.", ConstLabels: labels,
		}),
		fills: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wavehouse_cache_fills_total", Help: "Results stored in the cache.", ConstLabels: labels,
		}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_cache_errors_total", Help: "Cache operations that failed and made the caller bypass the cache, by operation.", ConstLabels: labels,
		}, []string{"op"}),
	}
	collectors := []prometheus.Collector{c.hits, c.misses, c.fills, c.errs}
	if bc, ok := next.(byteCounter); ok {
		collectors = append(collectors, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wavehouse_cache_bytes", Help: "Bytes the result cache holds, bookkeeping included.", ConstLabels: labels,
		}, func() float64 { return float64(bc.Bytes()) }))
	}
	for _, col := range collectors {
		if err := reg.Register(col); err != nil {
			return nil, err
		}
	}
	if v, ok := next.(cache.Viewer); ok {
		return &viewCache{Cache: c, viewer: v}, nil
	}
	return c, nil
}

func (c *Cache) lookup(value []byte, err error) ([]byte, error) {
	switch {
	case err == nil:
		c.hits.Inc()
	case errors.Is(err, cache.ErrMiss):
		c.misses.Inc()
	default:
		c.count("get", err)
	}
	return value, err
}

// count records err under op when it makes the caller bypass the cache.
func (c *Cache) count(op string, err error) error {
	if cache.Bypass(err) {
		c.errs.WithLabelValues(op).Inc()
	}
	return err
}

// Get counts a hit, a miss or an error.
func (c *Cache) Get(ctx context.Context, key cache.Key) ([]byte, error) {
	return c.lookup(c.next.Get(ctx, key))
}

// View counts like Get.
func (c *viewCache) View(ctx context.Context, key cache.Key) ([]byte, error) {
	return c.lookup(c.viewer.View(ctx, key))
}

// Set counts a fill when the value was stored.
func (c *Cache) Set(ctx context.Context, key cache.Key, value []byte, ttl time.Duration) error {
	err := c.next.Set(ctx, key, value, ttl)
	if err == nil {
		c.fills.Inc()
	}
	return c.count("set", err)
}

// Versions counts errors.
func (c *Cache) Versions(ctx context.Context, tenant string, deps cache.Deps) (cache.Versions, error) {
	v, err := c.next.Versions(ctx, tenant, deps)
	return v, c.count("versions", err)
}

// BumpTable counts errors.
func (c *Cache) BumpTable(ctx context.Context, tenant, table string) error {
	return c.count("bump", c.next.BumpTable(ctx, tenant, table))
}

// BumpTenant counts errors.
func (c *Cache) BumpTenant(ctx context.Context, tenant string) error {
	return c.count("bump", c.next.BumpTenant(ctx, tenant))
}

// Run runs the wrapped cache's background work.
func (c *Cache) Run(ctx context.Context) error { return c.next.Run(ctx) }

// Close closes the wrapped cache.
func (c *Cache) Close(ctx context.Context) error { return c.next.Close(ctx) }

// Health forwards to the wrapped cache, or reports a closed breaker when it has no health.
func (c *Cache) Health() cache.Health {
	if hr, ok := c.next.(cache.HealthReporter); ok {
		return hr.Health()
	}
	return cache.Health{Breaker: cache.BreakerClosed}
}
