package cachetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache"
)

func testMiss(t *testing.T, h *Harness) {
	c := open(t, h)
	wantMiss(t, c, cache.NewKey("tenant_miss", "SELECT 1", nil, cache.Versions{}), "never stored")
}

func testSetGet(t *testing.T, h *Harness) {
	c := open(t, h)
	key := cache.NewKey("tenant_set", "SELECT 1", nil, cache.Versions{})
	value := []byte(`{"data":[[1]],"rows":1}`)
	mustSet(t, c, key, value, time.Minute)
	value[0] = 'X' // Set must not retain the caller's slice.
	got, err := c.Get(t.Context(), key)
	if err != nil || string(got) != `{"data":[[1]],"rows":1}` {
		t.Fatalf("Get after Set = %q, %v; want the stored value", got, err)
	}
	got[0] = 'Y' // The returned slice belongs to the caller.
	wantHit(t, c, key, []byte(`{"data":[[1]],"rows":1}`), "after mutating the returned slice")

	mustSet(t, c, key, []byte("second"), time.Minute)
	wantHit(t, c, key, []byte("second"), "after overwrite")

	empty := cache.NewKey("tenant_set", "SELECT ''", nil, cache.Versions{})
	mustSet(t, c, empty, []byte{}, time.Minute)
	wantHit(t, c, empty, []byte{}, "empty value")

	big := make([]byte, min(h.MaxValueBytes, 256<<10))
	for i := range big {
		big[i] = byte('a' + i%7) // compressible
	}
	bigKey := cache.NewKey("tenant_set", "SELECT big", nil, cache.Versions{})
	mustSet(t, c, bigKey, big, time.Minute)
	wantHit(t, c, bigKey, big, "large compressible value")

	def := cache.NewKey("tenant_set", "SELECT default_ttl", nil, cache.Versions{})
	mustSet(t, c, def, []byte("d"), 0)
	wantHit(t, c, def, []byte("d"), "value set with the default TTL")
}

func testTTL(t *testing.T, h *Harness) {
	c := open(t, h)
	key := cache.NewKey("tenant_ttl", "SELECT now()", nil, cache.Versions{})
	if h.Advance != nil {
		mustSet(t, c, key, []byte("v"), 10*time.Second)
		h.Advance(9 * time.Second)
		wantHit(t, c, key, []byte("v"), "before the TTL")
		h.Advance(2 * time.Second)
		wantMiss(t, c, key, "after the TTL")
		return
	}
	// The backend keeps time itself: a short TTL, then poll for the expiry.
	start := time.Now()
	mustSet(t, c, key, []byte("v"), 700*time.Millisecond)
	if _, err := c.Get(t.Context(), key); err != nil && time.Since(start) < 600*time.Millisecond {
		t.Fatalf("Get right after Set: %v; want a hit", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.Get(t.Context(), key)
		if errors.Is(err, cache.ErrMiss) {
			if time.Since(start) < 700*time.Millisecond {
				t.Fatalf("entry gone after %s; its TTL is 700ms", time.Since(start))
			}
			return
		}
		if err != nil {
			t.Fatalf("Get while waiting for expiry: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("entry with a 700ms TTL still there after 10s")
		}
		pause(t, 20*time.Millisecond)
	}
}

func testOversize(t *testing.T, h *Harness) {
	c := open(t, h)
	over := make([]byte, h.MaxValueBytes+1)
	if _, err := rand.Read(over); err != nil {
		t.Fatal(err)
	}
	key := cache.NewKey("tenant_big", "SELECT huge", nil, cache.Versions{})
	err := c.Set(t.Context(), key, over, time.Minute)
	if !errors.Is(err, cache.ErrTooLarge) {
		t.Fatalf("Set of %d bytes (cap %d) = %v; want cache.ErrTooLarge", len(over), h.MaxValueBytes, err)
	}
	if cache.Bypass(err) {
		t.Fatal("cache.Bypass(ErrTooLarge) = true; an oversize fill is not an outage")
	}
	wantMiss(t, c, key, "oversize value")

	exact := over[:h.MaxValueBytes]
	mustSet(t, c, key, exact, time.Minute)
	v, err := c.Get(t.Context(), key)
	if err != nil || !bytes.Equal(v, exact) {
		t.Fatalf("value of exactly the cap: Get = %d bytes, %v; want it stored", len(v), err)
	}
}

func testClosed(t *testing.T, h *Harness) {
	c := h.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	if err := c.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(t.Context()); err != nil {
		t.Fatalf("second Close: %v; want nil (idempotent)", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after Close = %v; want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of Close")
	}
	key := cache.NewKey("tenant_closed", "SELECT 1", nil, cache.Versions{})
	checks := map[string]error{}
	_, checks["Get"] = c.Get(t.Context(), key)
	checks["Set"] = c.Set(t.Context(), key, []byte("v"), time.Minute)
	_, checks["Versions"] = c.Versions(t.Context(), "tenant_closed", cache.Deps{Tables: []string{"a"}})
	checks["BumpTable"] = c.BumpTable(t.Context(), "tenant_closed", "a")
	checks["BumpTenant"] = c.BumpTenant(t.Context(), "tenant_closed")
	for op, err := range checks {
		if !errors.Is(err, cache.ErrClosed) {
			t.Errorf("%s after Close = %v; want cache.ErrClosed", op, err)
		}
	}
}

// pause waits d without being a synchronisation point: it only paces a poll loop.
func pause(t *testing.T, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-t.Context().Done():
	}
}
