package localcache_test

import (
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/localcache"
)

// BenchmarkHit measures a cache hit as the query path does it: read versions, build the
// key, get the 4 KiB result.
func BenchmarkHit(b *testing.B) {
	c, err := localcache.New(localcache.Config{}, localcache.Deps{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(b.Context()) })
	deps := cache.Deps{Tables: []string{"events"}}
	v, _ := c.Versions(b.Context(), "acme", deps)
	if err := c.Set(b.Context(), cache.NewKey("acme", "SELECT count() FROM events", nil, v), make([]byte, 4<<10), time.Hour); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			v, err := c.Versions(b.Context(), "acme", deps)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.Get(b.Context(), cache.NewKey("acme", "SELECT count() FROM events", nil, v)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
