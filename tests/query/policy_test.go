package query_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache/localcache"
	"github.com/wavehouse/wavehouse/internal/query/pipes"
)

// clock is a settable time source for the cache's TTLs.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// TestPipeCachePolicy checks that a pipe's @ttl sets the lifetime of its cached result and
// that its @tables decide which inserts invalidate it.
func TestPipeCachePolicy(t *testing.T) {
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	c, err := localcache.New(localcache.Config{DefaultTTL: time.Minute}, localcache.Deps{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	e := newEnv(t, chdbStore(t), c)
	dir := t.TempDir()
	for name, src := range map[string]string{
		// The scanner cannot tell the tables of a table function, so without @tables the
		// result would depend on every insert of the tenant.
		"long.sql":    "-- @ttl 10m\n-- @tables events\nSELECT count() AS c FROM merge(currentDatabase(), '^events$')\n",
		"scanned.sql": "SELECT count() AS c FROM merge(currentDatabase(), '^events$') WHERE 1\n",
		"short.sql":   "SELECT count() AS c FROM events WHERE id > 1\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	set, err := pipes.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	e.pipes.Swap(set)
	get := func(name string) string {
		r := e.do(t, http.MethodGet, "/v1/pipes/"+name, "")
		if r.code != 200 {
			t.Fatalf("%s: %d %s", name, r.code, r.body)
		}
		return r.cache()
	}
	for _, p := range []string{"long", "scanned", "short"} {
		if s := get(p); s != "MISS" {
			t.Fatalf("%s first: %s", p, s)
		}
	}
	// An insert into another table: only the pipe without declared tables is orphaned.
	if err := e.cache.BumpTable(t.Context(), e.target.Tenant, "other"); err != nil {
		t.Fatal(err)
	}
	if s := get("long"); s != "HIT" {
		t.Errorf("declared @tables events, bump of other: %s, want HIT", s)
	}
	if s := get("scanned"); s != "MISS" {
		t.Errorf("undeclared tables, bump of other: %s, want MISS", s)
	}
	// Past the default TTL, only the pipe with a longer @ttl is still cached.
	get("short")
	clk.advance(2 * time.Minute)
	if s := get("long"); s != "HIT" {
		t.Errorf("@ttl 10m after 2m: %s, want HIT", s)
	}
	if s := get("short"); s != "MISS" {
		t.Errorf("default TTL 1m after 2m: %s, want MISS", s)
	}
	clk.advance(10 * time.Minute)
	if s := get("long"); s != "MISS" {
		t.Errorf("@ttl 10m after 12m: %s, want MISS", s)
	}
}
