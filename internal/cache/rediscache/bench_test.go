package rediscache_test

import (
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/rediscache"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// BenchmarkHit measures a cache hit as the query path does it: one MGET for the
// versions, then one GET of the 4 KiB result (compressible, so s2 is on the path).
func BenchmarkHit(b *testing.B) {
	addr := testsvc.RedisServer(b).Addr
	c, err := rediscache.New(rediscache.Config{Addrs: []string{addr}, KeyPrefix: testsvc.UniqueName(b, "bench") + ":", Timeout: time.Second}, rediscache.Deps{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(b.Context()) })
	deps := cache.Deps{Tables: []string{"events"}}
	v, err := c.Versions(b.Context(), "acme", deps)
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 4<<10)
	for i := range value {
		value[i] = byte('a' + i%13)
	}
	if err := c.Set(b.Context(), cache.NewKey("acme", "SELECT count() FROM events", nil, v), value, time.Hour); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			v, err := c.Versions(b.Context(), "acme", deps)
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := c.Get(b.Context(), cache.NewKey("acme", "SELECT count() FROM events", nil, v)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
