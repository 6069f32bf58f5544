package rediscache_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/cachetest"
	"github.com/wavehouse/wavehouse/internal/cache/rediscache"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testConfig is the configuration the tests use: a unique key prefix on addr, and a
// short breaker cool-down and retry interval so outages resolve quickly.
func testConfig(t *testing.T, addr string) rediscache.Config {
	return rediscache.Config{
		Addrs:           []string{addr},
		KeyPrefix:       testsvc.UniqueName(t, "whc") + ":",
		Timeout:         time.Second, // loopback, but a shared 2-core box under -race
		MaxValueBytes:   512 << 10,
		BreakerFailures: 5,
		BreakerCooldown: 150 * time.Millisecond,
		RetryInterval:   50 * time.Millisecond,
	}
}

func TestConformance(t *testing.T) {
	cachetest.Run(t, func(t *testing.T, opts cachetest.HarnessOptions) *cachetest.Harness {
		h := &cachetest.Harness{}
		var addr string
		if opts.Outage {
			proc := testsvc.StartRedis(t)
			addr = proc.Addr
			h.StopBackend = proc.Kill // SIGKILL: the harshest way Redis goes away
			h.StartBackend = proc.Start
		} else {
			addr = testsvc.RedisServer(t).Addr
		}
		cfg := testConfig(t, addr)
		h.MaxValueBytes = cfg.MaxValueBytes
		h.LoseVersions = func(t testing.TB, tenant string) {
			raw := redis.NewClient(&redis.Options{Addr: addr})
			defer raw.Close()
			tag := cfg.KeyPrefix + "{" + cache.EscapeTenant(tenant) + "}:"
			keys, err := raw.Keys(context.Background(), tag+"[etw]*").Result()
			if err != nil || len(keys) == 0 {
				t.Fatalf("version keys of %q: %q, %v", tenant, keys, err)
			}
			if err := raw.Del(context.Background(), keys...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		h.New = func(t *testing.T) cache.Cache {
			c, err := rediscache.New(cfg, rediscache.Deps{})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			return c
		}
		return h
	}, cachetest.Caps{Shared: true, Outage: true})
}
