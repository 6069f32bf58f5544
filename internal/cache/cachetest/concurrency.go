package cachetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache"
)

func testConcurrent(t *testing.T, h *Harness) {
	c := open(t, h)
	const workers, rounds = 8, 60
	tenants := []string{"tenant_c0", "tenant_c1"}
	start := make(map[string]cache.Versions, len(tenants))
	for _, tenant := range tenants {
		start[tenant] = mustVersions(t, c, tenant, cache.Deps{Tables: []string{"hot", "cold"}})
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tenant := tenants[w%len(tenants)]
			deps := cache.Deps{Tables: []string{"hot", "cold"}}
			for i := range rounds {
				v, err := c.Versions(t.Context(), tenant, deps)
				if err != nil {
					errs <- fmt.Errorf("Versions: %w", err)
					return
				}
				key := cache.NewKey(tenant, fmt.Sprintf("SELECT %d", i%5), nil, v)
				if got, err := c.Get(t.Context(), key); err == nil {
					if want := fmt.Sprintf("%s/%d", tenant, i%5); string(got) != want {
						errs <- fmt.Errorf("Get = %q; want %q", got, want)
						return
					}
				} else if !errors.Is(err, cache.ErrMiss) {
					errs <- fmt.Errorf("Get: %w", err)
					return
				}
				if err := c.Set(t.Context(), key, fmt.Appendf(nil, "%s/%d", tenant, i%5), time.Minute); err != nil {
					errs <- fmt.Errorf("Set: %w", err)
					return
				}
				if i%3 == 0 {
					if err := c.BumpTable(t.Context(), tenant, "hot"); err != nil {
						errs <- fmt.Errorf("BumpTable: %w", err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Versions are tokens, not counts: the bumped table moved, the other one did not.
	for _, tenant := range tenants {
		v := mustVersions(t, c, tenant, cache.Deps{Tables: []string{"hot", "cold"}})
		if v.Tables["hot"] == start[tenant].Tables["hot"] || v.Tables["cold"] != start[tenant].Tables["cold"] {
			t.Errorf("tenant %s after concurrent bumps of hot: %+v, before %+v; want hot moved and cold not", tenant, v.Tables, start[tenant].Tables)
		}
	}
}
