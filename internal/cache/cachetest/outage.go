package cachetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache"
)

// unavailableWithin is how long one operation may take to report an unreachable backend.
const unavailableWithin = 3 * time.Second

func testOutage(t *testing.T, h *Harness) {
	c := open(t, h)
	hr, ok := c.(cache.HealthReporter)
	if !ok {
		t.Fatal("a backend with the Outage capability must implement cache.HealthReporter")
	}
	const tenant = "tenant_outage"
	deps := cache.Deps{Tables: []string{"events"}}
	key := queryKey(t, c, tenant, "SELECT 1", deps)
	mustSet(t, c, key, []byte("v"), time.Minute)
	if s := hr.Health(); s.Breaker != cache.BreakerClosed || s.PendingInvalidations != 0 {
		t.Fatalf("health while up = %+v; want a closed breaker and nothing pending", s)
	}
	opensBefore := hr.Health().BreakerOpens

	// Query-like load runs through the whole outage: every answer is a hit, a miss or
	// cache.ErrUnavailable (bypass), never anything else.
	stopLoad := startLoad(t, c, tenant, deps)

	h.StopBackend(t)

	// Every operation reports unavailable, quickly, until the breaker opens.
	deadline := time.Now().Add(30 * time.Second)
	for hr.Health().Breaker != cache.BreakerOpen {
		start := time.Now()
		_, err := c.Get(t.Context(), key)
		if !errors.Is(err, cache.ErrUnavailable) || !cache.Bypass(err) {
			t.Fatalf("Get with the backend down = %v; want cache.ErrUnavailable", err)
		}
		if d := time.Since(start); d > unavailableWithin {
			t.Fatalf("Get with the backend down took %s; want under %s", d, unavailableWithin)
		}
		if time.Now().After(deadline) {
			t.Fatal("breaker still not open after 30s of failures")
		}
	}
	// Open: operations fail fast without touching the network.
	start := time.Now()
	for range 20 {
		if _, err := c.Versions(t.Context(), tenant, deps); !errors.Is(err, cache.ErrUnavailable) {
			t.Fatalf("Versions with the breaker open = %v; want cache.ErrUnavailable", err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("20 operations with the breaker open took %s; want them to fail fast", d)
	}

	// Boot never waits for the backend: a new instance is built and answers at once.
	fresh := open(t, h)
	start = time.Now()
	if _, err := fresh.Get(t.Context(), key); !errors.Is(err, cache.ErrUnavailable) {
		t.Fatalf("Get on an instance built while the backend is down = %v; want cache.ErrUnavailable", err)
	}
	if d := time.Since(start); d > unavailableWithin {
		t.Fatalf("first Get on an instance built while the backend is down took %s", d)
	}

	// An invalidation that cannot reach the backend is remembered, and lookups that
	// depend on it bypass until it lands. lazy's Run is held back so that the bump stays
	// undelivered after the backend returns.
	lazy := h.New(t)
	t.Cleanup(func() { _ = lazy.Close(t.Context()) })
	lazyHealth := lazy.(cache.HealthReporter)
	for _, b := range []cache.Versioner{c, lazy} {
		if err := b.BumpTable(t.Context(), tenant, "events"); err != nil {
			t.Fatalf("BumpTable with the backend down = %v; want nil (remembered for retry)", err)
		}
	}
	if n := hr.Health().PendingInvalidations; n < 1 {
		t.Fatalf("pending invalidations after a bump with the backend down = %d; want at least 1", n)
	}

	h.StartBackend(t)

	// Wait until lazy reaches the backend again (Get does not depend on versions).
	waitFor(t, "lazy instance reaching the restarted backend", func() bool {
		_, err := lazy.Get(t.Context(), key)
		return err == nil || errors.Is(err, cache.ErrMiss)
	})
	if n := lazyHealth.Health().PendingInvalidations; n != 1 {
		t.Fatalf("lazy instance pending invalidations = %d; want 1 until its Run delivers it", n)
	}
	if v, err := lazy.Versions(t.Context(), tenant, deps); !errors.Is(err, cache.ErrUnavailable) {
		t.Fatalf("Versions over a table with an undelivered bump = %+v, %v; want cache.ErrUnavailable", v, err)
	}
	if v, err := lazy.Versions(t.Context(), tenant, cache.Deps{AllTables: true}); !errors.Is(err, cache.ErrUnavailable) {
		t.Fatalf("Versions over all tables with an undelivered bump = %+v, %v; want cache.ErrUnavailable", v, err)
	}
	if _, err := lazy.Versions(t.Context(), tenant, cache.Deps{Tables: []string{"other"}}); err != nil {
		t.Fatalf("Versions over a table without undelivered bumps = %v; want an answer", err)
	}
	lctx, lcancel := context.WithCancel(t.Context())
	ldone := make(chan error, 1)
	go func() { ldone <- lazy.Run(lctx) }()
	t.Cleanup(func() { lcancel(); <-ldone })

	for _, inst := range []cache.Cache{c, lazy} {
		ih := inst.(cache.HealthReporter)
		waitFor(t, "remembered bumps delivered", func() bool {
			_, err := inst.Versions(t.Context(), tenant, deps)
			return ih.Health().PendingInvalidations == 0 && err == nil
		})
	}
	if v := mustVersions(t, c, tenant, deps); v.Tables["events"] < 2 {
		t.Fatalf("after recovery events is at version %d; want both remembered bumps landed", v.Tables["events"])
	}
	stopLoad()
	if s := hr.Health(); s.Breaker != cache.BreakerClosed {
		t.Fatalf("breaker after recovery = %s; want closed", s.Breaker)
	}
	if got := hr.Health().BreakerOpens - opensBefore; got != 1 {
		t.Errorf("breaker opened %d times during one outage; want exactly 1", got)
	}
	// Hits resume.
	k2 := queryKey(t, c, tenant, "SELECT 2", deps)
	mustSet(t, c, k2, []byte("back"), time.Minute)
	wantHit(t, c, k2, []byte("back"), "after recovery")
}

// waitFor polls cond until it holds, failing the test after 30s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 30s waiting for %s", what)
		}
		pause(t, 20*time.Millisecond)
	}
}

// startLoad runs lookups and fills on c from four goroutines until the returned function
// is called; unexpected errors fail the test.
func startLoad(t *testing.T, c cache.Cache, tenant string, deps cache.Deps) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var ops atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sql := fmt.Sprintf("SELECT %d", w)
			for ctx.Err() == nil {
				ops.Add(1)
				v, err := c.Versions(ctx, tenant, deps)
				if err != nil {
					if !errors.Is(err, cache.ErrUnavailable) && ctx.Err() == nil {
						t.Errorf("Versions under load: %v; want nil or cache.ErrUnavailable", err)
						return
					}
					pause(t, 5*time.Millisecond)
					continue
				}
				key := cache.NewKey(tenant, sql, nil, v)
				if _, err := c.Get(ctx, key); err != nil && !errors.Is(err, cache.ErrMiss) && !errors.Is(err, cache.ErrUnavailable) && ctx.Err() == nil {
					t.Errorf("Get under load: %v; want a hit, a miss or cache.ErrUnavailable", err)
					return
				}
				if err := c.Set(ctx, key, []byte(sql), time.Minute); err != nil && !errors.Is(err, cache.ErrUnavailable) && ctx.Err() == nil {
					t.Errorf("Set under load: %v; want nil or cache.ErrUnavailable", err)
					return
				}
			}
		}()
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			if ops.Load() == 0 {
				t.Error("the load generator ran no operation")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
