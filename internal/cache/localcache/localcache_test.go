package localcache_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/localcache"
)

func TestEvictsLeastRecentlyUsedWithinMaxBytes(t *testing.T) {
	const maxBytes = 64 << 10
	c, err := localcache.New(localcache.Config{MaxBytes: maxBytes, MaxValueBytes: 8 << 10}, localcache.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(t.Context()) })
	key := func(i int) cache.Key { return cache.NewKey("t", fmt.Sprint(i), nil, cache.Versions{}) }
	value := make([]byte, 4<<10)
	if err := c.Set(t.Context(), key(0), value, time.Minute); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 100; i++ {
		if err := c.Set(t.Context(), key(i), value, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Get(t.Context(), key(0)); err != nil { // keep key 0 hot
			t.Fatalf("hot key evicted after %d fills: %v", i, err)
		}
		if b := c.Bytes(); b > maxBytes {
			t.Fatalf("cache holds %d bytes; MaxBytes is %d", b, maxBytes)
		}
	}
	if _, err := c.Get(t.Context(), key(1)); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("cold key 1 after 100 fills of a 64 KiB cache: %v; want evicted", err)
	}
	if _, err := c.Get(t.Context(), key(99)); err != nil {
		t.Fatalf("newest key: %v; want a hit", err)
	}
}

func TestValidateNamesEveryBadKey(t *testing.T) {
	err := localcache.Config{MaxBytes: -1, MaxValueBytes: -1, DefaultTTL: -time.Second}.Validate()
	for _, k := range []string{"cache.local.max_bytes", "MaxValueBytes", "DefaultTTL"} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("Validate() = %v; want it to name %s", err, k)
		}
	}
	if err := (localcache.Config{MaxBytes: 10, MaxValueBytes: 20}).Validate(); err == nil {
		t.Error("Validate accepted max_value_bytes above max_bytes")
	}
	if err := (localcache.Config{}).Validate(); err != nil {
		t.Errorf("zero Config (defaults) = %v; want valid", err)
	}
}

func TestViewLendsTheStoredValueAndGetCopies(t *testing.T) {
	c, err := localcache.New(localcache.Config{}, localcache.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(t.Context()) })
	key := cache.NewKey("t", "SELECT 1", nil, cache.Versions{})
	if _, err := c.View(t.Context(), key); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("View before Set: %v; want ErrMiss", err)
	}
	src := []byte("result")
	if err := c.Set(t.Context(), key, src, time.Minute); err != nil {
		t.Fatal(err)
	}
	src[0] = 'X' // Set must have copied
	v1, err := c.View(t.Context(), key)
	if err != nil || string(v1) != "result" {
		t.Fatalf("View = %q, %v", v1, err)
	}
	v2, _ := c.View(t.Context(), key)
	if &v1[0] != &v2[0] {
		t.Error("View copied the value; want the stored slice lent")
	}
	g, _ := c.Get(t.Context(), key)
	if &g[0] == &v1[0] {
		t.Error("Get lent the stored slice; want a copy the caller owns")
	}
	if err := c.Set(t.Context(), key, []byte("newer!"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if string(v1) != "result" {
		t.Errorf("a lent value changed after the entry was replaced: %q", v1)
	}
}
