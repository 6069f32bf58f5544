package rediscache_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/rediscache"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// lostVersions is the state the tests of lost version keys start from: a result filed before
// an insert ("before") and one filed after it ("after"), both still stored.
type lostVersions struct {
	c      *rediscache.Cache
	raw    *redis.Client
	cfg    rediscache.Config
	deps   cache.Deps
	tenant string
}

const lostSQL = "SELECT count() FROM events"

func newLostVersions(t *testing.T, addr string) *lostVersions {
	t.Helper()
	cfg := testConfig(t, addr)
	c, err := rediscache.New(cfg, rediscache.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(t.Context()) })
	raw := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = raw.Close() })
	return &lostVersions{c: c, raw: raw, cfg: cfg, deps: cache.Deps{Tables: []string{"events"}}, tenant: "tenant_lost"}
}

func (l *lostVersions) key(t *testing.T) cache.Key {
	t.Helper()
	v, err := l.c.Versions(t.Context(), l.tenant, l.deps)
	if err != nil {
		t.Fatalf("Versions: %v", err)
	}
	return cache.NewKey(l.tenant, lostSQL, nil, v)
}

func (l *lostVersions) versionKeys() []string {
	tag := l.cfg.KeyPrefix + "{" + cache.EscapeTenant(l.tenant) + "}:"
	return []string{tag + "t:" + cache.EscapeName("events"), tag + "w", tag + "e"}
}

// fillBeforeAndAfterInsert files "before" under the versions before an insert and "after"
// under the versions after it, and returns both keys.
func (l *lostVersions) fillBeforeAndAfterInsert(t *testing.T) (before, after cache.Key) {
	t.Helper()
	before = l.key(t)
	if err := l.c.Set(t.Context(), before, []byte("before"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := l.c.BumpTable(t.Context(), l.tenant, "events"); err != nil {
		t.Fatal(err)
	}
	after = l.key(t)
	if err := l.c.Set(t.Context(), after, []byte("after"), time.Hour); err != nil {
		t.Fatal(err)
	}
	return before, after
}

// wantNoHit fails when the lookup a query would make now finds an entry.
func (l *lostVersions) wantNoHit(t *testing.T, why string) {
	t.Helper()
	v, err := l.c.Get(t.Context(), l.key(t))
	if !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("%s: Get = %q, %v; want cache.ErrMiss (a lost version must never match a cached fill)", why, v, err)
	}
}

// insertAndWantNoHit bumps the table like an insert and requires the next lookup to miss.
func (l *lostVersions) insertAndWantNoHit(t *testing.T, why string) {
	t.Helper()
	if err := l.c.BumpTable(t.Context(), l.tenant, "events"); err != nil {
		t.Fatal(err)
	}
	l.wantNoHit(t, why)
}

// TestDeletedVersionKeyIsAMiss: DEL of the table's version key after fills is a miss, and so is
// the lookup after the next insert (a counter restarting from nothing must not come back to a
// value an older fill was filed under).
func TestDeletedVersionKeyIsAMiss(t *testing.T) {
	l := newLostVersions(t, testsvc.RedisServer(t).Addr)
	l.fillBeforeAndAfterInsert(t)
	if err := l.raw.Del(t.Context(), l.versionKeys()[0]).Err(); err != nil {
		t.Fatal(err)
	}
	l.wantNoHit(t, "lookup after DEL of the table's version key")
	l.insertAndWantNoHit(t, "lookup after DEL and a later insert")

	// Losing every counter of the tenant at once is no different.
	l.fillBeforeAndAfterInsert(t)
	if err := l.raw.Del(t.Context(), l.versionKeys()...).Err(); err != nil {
		t.Fatal(err)
	}
	l.wantNoHit(t, "lookup after DEL of all the tenant's version keys")
	l.insertAndWantNoHit(t, "lookup after DEL of all version keys and a later insert")
}

// TestEvictedVersionKeysAreAMiss runs a private Redis with a small maxmemory and allkeys-lru,
// fills big entries until the version keys are evicted, files results under the versions read
// before the eviction, and requires the next lookups to miss.
func TestEvictedVersionKeysAreAMiss(t *testing.T) {
	proc := testsvc.StartRedis(t)
	l := newLostVersions(t, proc.Addr)
	used, err := usedMemory(t, l.raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"maxmemory", strconv.FormatInt(used+(2<<20), 10)}, {"maxmemory-policy", "allkeys-lru"}} {
		if err := l.raw.ConfigSet(t.Context(), kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	before, after := l.fillBeforeAndAfterInsert(t)

	filler := make([]byte, 32<<10)
	const maxFillers = 5000 // 160 MiB through a 2 MiB budget
	evicted := false
	for i := 0; i < maxFillers && !evicted; i++ {
		_, _ = rand.Read(filler) // incompressible
		k := cache.NewKey(l.tenant, fmt.Sprintf("SELECT filler %d", i), nil, cache.Versions{})
		if err := l.c.Set(t.Context(), k, filler, time.Hour); err != nil {
			t.Fatalf("filler %d: %v", i, err)
		}
		n, err := l.raw.Exists(t.Context(), l.versionKeys()[:2]...).Result() // EXISTS does not touch the LRU clock
		if err != nil {
			t.Fatal(err)
		}
		evicted = n == 0
	}
	if !evicted {
		t.Fatalf("the version keys survived %d fillers of %d bytes; the test did not evict them", maxFillers, len(filler))
	}
	// Queries that read their versions before the eviction file their results now (Redis's LRU
	// clock ticks once a second, so keeping them hot through the fillers is not reliable).
	for _, k := range []cache.Key{before, after} {
		if err := l.c.Set(t.Context(), k, []byte("stale"), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	l.wantNoHit(t, "lookup after the version keys were evicted")
	l.insertAndWantNoHit(t, "lookup after eviction and a later insert")
}

// TestRedisRestartIsAMiss: a query that read its versions before Redis restarted empty files
// its result after the restart; the next insert must orphan that fill.
func TestRedisRestartIsAMiss(t *testing.T) {
	proc := testsvc.StartRedis(t)
	l := newLostVersions(t, proc.Addr)
	if err := l.c.BumpTable(t.Context(), l.tenant, "events"); err != nil {
		t.Fatal(err)
	}
	inFlight := l.key(t) // read before the query runs
	proc.Stop(t)
	proc.Start(t) // no persistence: empty
	if err := l.c.Set(t.Context(), inFlight, []byte("before"), time.Hour); err != nil {
		t.Fatalf("fill after the restart: %v", err)
	}
	l.insertAndWantNoHit(t, "lookup after a restart, a fill under the old versions and an insert")
	l.fillBeforeAndAfterInsert(t)
	proc.Stop(t)
	proc.Start(t)
	l.wantNoHit(t, "lookup after a second restart")
}

func usedMemory(t *testing.T, raw *redis.Client) (int64, error) {
	info, err := raw.InfoMap(t.Context(), "memory").Result()
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(info["Memory"]["used_memory"], 10, 64)
}
