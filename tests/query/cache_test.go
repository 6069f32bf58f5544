package query_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/rediscache"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// newRedisCache returns a Redis cache on addr with its own key prefix, closed in cleanup.
func newRedisCache(t *testing.T, addr string, cfg rediscache.Config) *rediscache.Cache {
	t.Helper()
	cfg.Addrs = []string{addr}
	cfg.KeyPrefix = testsvc.UniqueName(t, "whq") + ":"
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Second // loopback, but a shared 2-core box under -race
	}
	c, err := rediscache.New(cfg, rediscache.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// TestReadYourWrites inserts through the store, bumps the table like the ingest writer does
// after an insert, and requires the very next query — raw SQL and a pipe — to see the rows,
// on both store backends and both cache backends.
func TestReadYourWrites(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t)
			t.Run("local", func(t *testing.T) { testReadYourWrites(t, newEnv(t, s, nil)) })
			t.Run("redis", func(t *testing.T) {
				c := newRedisCache(t, testsvc.RedisServer(t).Addr, rediscache.Config{})
				testReadYourWrites(t, newEnv(t, s, c))
			})
		})
	}
}

func testReadYourWrites(t *testing.T, e *env) {
	const sql = "SELECT count() AS c FROM events"
	read := func() (string, string) {
		r := e.query(t, map[string]any{"sql": sql})
		if r.code != 200 {
			t.Fatalf("query: %d %s", r.code, r.body)
		}
		return string(r.data(t)[0]["c"].(json.Number)), r.cache()
	}
	pipe := func() (string, string) {
		r := e.do(t, http.MethodGet, "/v1/pipes/count", "")
		if r.code != 200 {
			t.Fatalf("pipe: %d %s", r.code, r.body)
		}
		return string(r.data(t)[0]["c"].(json.Number)), r.cache()
	}
	want := 3
	for i := range 5 {
		for _, get := range []func() (string, string){read, pipe} {
			get() // fill
			if n, state := get(); state != "HIT" || n != strconv.Itoa(want) {
				t.Fatalf("round %d before insert: %s rows (%s), want a HIT of %d", i, n, state, want)
			}
		}
		e.insert(t, `[`+strconv.Itoa(100+i)+`,"new",0]`)
		if err := e.cache.BumpTable(t.Context(), e.target.Tenant, "events"); err != nil {
			t.Fatal(err)
		}
		want++
		for name, get := range map[string]func() (string, string){"query": read, "pipe": pipe} {
			if n, state := get(); n != strconv.Itoa(want) {
				t.Fatalf("round %d %s after insert: %s rows (%s), want %d (a stale result was served)", i, name, n, state, want)
			}
		}
	}
}

// TestRedisKilledDuringLoad kills Redis under a steady query load: every query keeps
// succeeding (bypassing the cache), the breaker opens exactly once, and once Redis is back
// hits resume.
func TestRedisKilledDuringLoad(t *testing.T) {
	redis := testsvc.StartRedis(t)
	c := newRedisCache(t, redis.Addr, rediscache.Config{
		Timeout: 200 * time.Millisecond, BreakerFailures: 3, BreakerCooldown: 200 * time.Millisecond,
		RetryInterval: 50 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(t.Context())
	runDone := make(chan error, 1)
	go func() { runDone <- c.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-runDone; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	e := newEnv(t, chdbStore(t), c)

	var (
		mu       sync.Mutex
		counts   = map[string]int{}
		failures []string
		stop     atomic.Bool
		wg       sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for !stop.Load() {
				r := e.query(t, map[string]any{"sql": "SELECT count() AS c FROM events"})
				mu.Lock()
				if r.code != 200 {
					failures = append(failures, strconv.Itoa(r.code)+" "+string(r.body))
				} else {
					counts[r.cache()]++
				}
				mu.Unlock()
			}
		})
	}
	defer func() { stop.Store(true); wg.Wait() }()
	seen := func(state string) int { mu.Lock(); defer mu.Unlock(); return counts[state] }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if !poll.Within(t, 20*time.Second, cond) {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("timed out waiting for %s; responses %v, failures %v, health %+v", what, counts, failures, c.Health())
		}
	}

	waitFor("cache hits", func() bool { return seen("HIT") >= 50 })
	redis.Kill(t)
	bypassed := seen("BYPASS")
	waitFor("bypassed answers while Redis is down", func() bool { return seen("BYPASS") >= bypassed+50 })
	if h := c.Health(); h.Breaker == cache.BreakerClosed || h.BreakerOpens != 1 {
		t.Fatalf("health while Redis is down: %+v", h)
	}
	redis.Start(t)
	hits := seen("HIT")
	waitFor("hits after Redis is back", func() bool { return seen("HIT") >= hits+50 })
	stop.Store(true)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if len(failures) > 0 {
		t.Fatalf("%d queries failed during the outage, first: %s", len(failures), failures[0])
	}
	if h := c.Health(); h.BreakerOpens != 1 || h.Breaker != cache.BreakerClosed {
		t.Fatalf("health after recovery: %+v, want closed after exactly one open", h)
	}
	t.Logf("responses: %v", counts)
}

// TestLostRedisVersionIsAMiss deletes the table's version key in Redis after an insert (as an
// eviction or an operator would): the next query must miss and return the current count, never
// a HIT of a result filed before the insert.
func TestLostRedisVersionIsAMiss(t *testing.T) {
	b := backends()[0]
	s := b.open(t)
	proc := testsvc.StartRedis(t) // private: the test lists and deletes keys
	e := newEnv(t, s, newRedisCache(t, proc.Addr, rediscache.Config{}))
	raw := redis.NewClient(&redis.Options{Addr: proc.Addr})
	t.Cleanup(func() { _ = raw.Close() })
	read := func() (string, string) {
		r := e.query(t, map[string]any{"sql": "SELECT count() AS c FROM events"})
		if r.code != 200 {
			t.Fatalf("query: %d %s", r.code, r.body)
		}
		return string(r.data(t)[0]["c"].(json.Number)), r.cache()
	}
	before, _ := read() // fill under the versions before the insert
	if _, state := read(); state != "HIT" {
		t.Fatalf("second read = %s, want HIT", state)
	}
	e.insert(t, `[900,"lost",0]`)
	if err := e.cache.BumpTable(t.Context(), e.target.Tenant, "events"); err != nil {
		t.Fatal(err)
	}
	n, _ := read()
	read() // the post-insert result is cached too
	keys, err := raw.Keys(t.Context(), "*:t:events").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("version key of events: %q, %v", keys, err)
	}
	if err := raw.Del(t.Context(), keys[0]).Err(); err != nil {
		t.Fatal(err)
	}
	if got, state := read(); state != "MISS" || got != n || got == before {
		t.Fatalf("after DEL of the version key: %s rows (%s); want a MISS of %s (before the insert: %s)", got, state, n, before)
	}
}
