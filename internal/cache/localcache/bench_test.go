package localcache_test

import (
	"context"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/localcache"
)

// BenchmarkHit measures a cache hit as the query path does it: read versions, build the
// key, get the 4 KiB result (Get copies it; View, which the query service uses, lends it).
func BenchmarkHit(b *testing.B) {
	for _, m := range []struct {
		name string
		get  func(c *localcache.Cache) func(context.Context, cache.Key) ([]byte, error)
	}{
		{"get", func(c *localcache.Cache) func(context.Context, cache.Key) ([]byte, error) { return c.Get }},
		{"view", func(c *localcache.Cache) func(context.Context, cache.Key) ([]byte, error) { return c.View }},
	} {
		b.Run(m.name, func(b *testing.B) {
			c, err := localcache.New(localcache.Config{}, localcache.Deps{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c.Close(context.Background()) })
			deps := cache.Deps{Tables: []string{"events"}}
			v, _ := c.Versions(b.Context(), "acme", deps)
			if err := c.Set(b.Context(), cache.NewKey("acme", "SELECT count() FROM events", nil, v), make([]byte, 4<<10), time.Hour); err != nil {
				b.Fatal(err)
			}
			get := m.get(c)
			digest := cache.DigestQuery("SELECT count() FROM events", nil)
			ctx := b.Context()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					v, err := c.Versions(ctx, "acme", deps)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := get(ctx, digest.Key("acme", v)); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
