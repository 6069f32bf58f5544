package localcache_test

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/cachetest"
	"github.com/wavehouse/wavehouse/internal/cache/localcache"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is a clock the test advances by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestConformance(t *testing.T) {
	cachetest.Run(t, func(t *testing.T, _ cachetest.HarnessOptions) *cachetest.Harness {
		clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		cfg := localcache.Config{MaxBytes: 8 << 20, MaxValueBytes: 1 << 20}
		return &cachetest.Harness{
			New: func(t *testing.T) cache.Cache {
				c, err := localcache.New(cfg, localcache.Deps{Now: clock.Now})
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return c
			},
			MaxValueBytes: cfg.MaxValueBytes,
			Advance:       clock.Advance,
		}
	}, cachetest.Caps{})
}
