// Package cachetest is the conformance suite of the cache layer. Every backend runs it
// from its own conformance_test.go against a real backend:
//
//	cachetest.Run(t, newHarness, cachetest.Caps{Shared: true, Outage: true})
package cachetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache"
)

// Caps names the optional behaviours a backend claims; the suite checks each claim.
type Caps struct {
	// Shared: instances of one harness share one store and see each other's entries and
	// bumps.
	Shared bool
	// Outage: the harness can stop and start the backend; the cache then reports
	// cache.ErrUnavailable quickly, opens its breaker, remembers bumps and recovers.
	Outage bool
}

// HarnessOptions tells newHarness what the subtest needs.
type HarnessOptions struct {
	// Outage asks for a backend private to this harness that StopBackend and
	// StartBackend may stop and start.
	Outage bool
}

// Harness gives the suite instances of the backend under test. Every harness is
// isolated from every other (its own key prefix or its own store).
type Harness struct {
	// New returns a new, unstarted instance. The suite runs its Run method and closes
	// it. For a Shared backend all instances of one harness use one store. New must not
	// wait for the backend to be reachable.
	New func(t *testing.T) cache.Cache
	// MaxValueBytes is the largest value the instances store.
	MaxValueBytes int
	// Advance moves the clock the instances use for TTLs. Nil when the backend keeps
	// time itself; the TTL test then uses a short TTL and polls.
	Advance func(d time.Duration)
	// LoseVersions deletes every stored version of tenant behind the instances' back, as an
	// eviction, a DEL or an empty restart would. Nil when the backend cannot lose a version
	// without losing the results with it (an in-process backend).
	LoseVersions func(t testing.TB, tenant string)
	// StopBackend and StartBackend stop and restart the backend (Outage only).
	StopBackend  func(t testing.TB)
	StartBackend func(t testing.TB)
}

// NewHarness builds a harness for one subtest.
type NewHarness func(t *testing.T, opts HarnessOptions) *Harness

// Run runs the conformance suite.
func Run(t *testing.T, newHarness NewHarness, caps Caps) {
	t.Run("Miss", func(t *testing.T) { testMiss(t, newHarness(t, HarnessOptions{})) })
	t.Run("SetGet", func(t *testing.T) { testSetGet(t, newHarness(t, HarnessOptions{})) })
	t.Run("TTL", func(t *testing.T) { testTTL(t, newHarness(t, HarnessOptions{})) })
	t.Run("Oversize", func(t *testing.T) { testOversize(t, newHarness(t, HarnessOptions{})) })
	t.Run("Closed", func(t *testing.T) { testClosed(t, newHarness(t, HarnessOptions{})) })
	t.Run("TenantIsolation", func(t *testing.T) { testTenantIsolation(t, newHarness(t, HarnessOptions{})) })
	t.Run("VersionTokens", func(t *testing.T) { testVersionTokens(t, newHarness(t, HarnessOptions{})) })
	t.Run("LostVersions", func(t *testing.T) {
		h := newHarness(t, HarnessOptions{})
		if h.LoseVersions == nil {
			t.Skip("the harness cannot lose versions")
		}
		testLostVersions(t, h)
	})
	t.Run("BumpOrphans", func(t *testing.T) { testBumpOrphans(t, newHarness(t, HarnessOptions{})) })
	t.Run("BumpDuringQueryOrphansFill", func(t *testing.T) { testBumpDuringQuery(t, newHarness(t, HarnessOptions{})) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, newHarness(t, HarnessOptions{})) })
	t.Run("Shared", func(t *testing.T) {
		h := newHarness(t, HarnessOptions{})
		if !caps.Shared {
			testNotShared(t, h)
			return
		}
		testShared(t, h)
	})
	if caps.Outage {
		t.Run("Outage", func(t *testing.T) { testOutage(t, newHarness(t, HarnessOptions{Outage: true})) })
	}
}

// open returns a started instance that is stopped and closed when the test ends.
func open(t *testing.T, h *Harness) cache.Cache {
	t.Helper()
	c := h.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

// wantMiss fails the test unless Get reports a miss for key.
func wantMiss(t *testing.T, c cache.Results, key cache.Key, why string) {
	t.Helper()
	v, err := c.Get(t.Context(), key)
	if !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("%s: Get = %q, %v; want cache.ErrMiss", why, v, err)
	}
	if cache.Bypass(err) {
		t.Fatalf("%s: cache.Bypass(%v) = true; a miss must not bypass", why, err)
	}
}

// wantHit fails the test unless Get returns want for key.
func wantHit(t *testing.T, c cache.Results, key cache.Key, want []byte, why string) {
	t.Helper()
	v, err := c.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("%s: Get: %v; want a hit", why, err)
	}
	if string(v) != string(want) {
		t.Fatalf("%s: Get = %q; want %q", why, v, want)
	}
}

func mustSet(t *testing.T, c cache.Results, key cache.Key, value []byte, ttl time.Duration) {
	t.Helper()
	if err := c.Set(t.Context(), key, value, ttl); err != nil {
		t.Fatalf("Set(%v): %v", key, err)
	}
}

func mustVersions(t *testing.T, c cache.Versioner, tenant string, deps cache.Deps) cache.Versions {
	t.Helper()
	v, err := c.Versions(t.Context(), tenant, deps)
	if err != nil {
		t.Fatalf("Versions(%q, %+v): %v", tenant, deps, err)
	}
	return v
}

func mustBumpTable(t *testing.T, c cache.Versioner, tenant, table string) {
	t.Helper()
	if err := c.BumpTable(t.Context(), tenant, table); err != nil {
		t.Fatalf("BumpTable(%q, %q): %v", tenant, table, err)
	}
}

// queryKey builds the key a query over tables would use with the current versions.
func queryKey(t *testing.T, c cache.Versioner, tenant, sql string, deps cache.Deps) cache.Key {
	t.Helper()
	return cache.NewKey(tenant, sql, map[string]string{"p": "1"}, mustVersions(t, c, tenant, deps))
}
