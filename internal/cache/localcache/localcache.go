// Package localcache is the in-process cache backend (cache.backend: local): results in a
// byte-bounded LRU with per-entry TTL, and random version tokens in memory, starting from a
// random token per instance. It is per process: two instances never see each other's entries
// or bumps.
package localcache

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache"
)

var (
	_ cache.Cache          = (*Cache)(nil)
	_ cache.HealthReporter = (*Cache)(nil)
	_ cache.Viewer         = (*Cache)(nil)
)

// entryOverhead approximates the bookkeeping bytes of one entry (list element, map slot,
// struct), so that many tiny entries still count against MaxBytes.
const entryOverhead = 128

// Cache is the in-process cache. It is safe for concurrent use.
type Cache struct {
	cfg    Config
	now    func() time.Time
	closed chan struct{}
	once   sync.Once

	// mu guards the LRU. A hit takes it shared: an entry among the most recently used
	// quarter is not moved (see fresh), so a hot entry's hits never write to the list and
	// concurrent readers do not queue behind each other.
	mu      sync.RWMutex
	lru     *list.List // of *entry, most recent at the front
	entries map[cache.Key]*list.Element
	bytes   int64
	clock   uint64 // advanced by every move to the front; entry.stamp records it

	vmu     sync.RWMutex
	tenants map[string]*tenantVersions
	// base is the random token every version of this instance starts from; a bump writes a
	// fresh random token. No two instances (so no two processes) share a starting point.
	base uint64
}

type entry struct {
	key     cache.Key
	value   []byte // never written after Set, so View can lend it
	expires time.Time
	weight  int64
	stamp   uint64 // clock when the entry was last moved to the front
}

type tenantVersions struct {
	epoch  uint64
	writes uint64
	tables map[string]uint64
}

// New returns an empty cache. It starts no goroutine.
func New(cfg Config, deps Deps) (*Cache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	return &Cache{
		cfg:     cfg.withDefaults(),
		now:     now,
		closed:  make(chan struct{}),
		lru:     list.New(),
		entries: make(map[cache.Key]*list.Element),
		tenants: make(map[string]*tenantVersions),
		base:    cache.NewToken(),
	}, nil
}

func (c *Cache) checkOpen(ctx context.Context) error {
	select {
	case <-c.closed:
		return cache.ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// Get returns a copy of the value stored under key, or cache.ErrMiss.
func (c *Cache) Get(ctx context.Context, key cache.Key) ([]byte, error) {
	v, err := c.View(ctx, key)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), v...), nil
}

// View returns the value stored under key without copying it, or cache.ErrMiss. The slice
// must not be modified.
func (c *Cache) View(ctx context.Context, key cache.Key) ([]byte, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	now := c.now()
	c.mu.RLock()
	el, ok := c.entries[key]
	if !ok {
		c.mu.RUnlock()
		return nil, cache.ErrMiss
	}
	e := el.Value.(*entry)
	if now.Before(e.expires) && c.freshLocked(e) {
		c.mu.RUnlock()
		return e.value, nil
	}
	c.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok = c.entries[key]; !ok {
		return nil, cache.ErrMiss
	}
	e = el.Value.(*entry)
	if !now.Before(e.expires) {
		c.removeLocked(el)
		return nil, cache.ErrMiss
	}
	c.frontLocked(el)
	return e.value, nil
}

// freshLocked reports whether e is among the most recently used quarter of the entries:
// every entry in front of it was moved there after it, so fewer than a quarter of the
// entries are. Such an entry is not moved on a hit; eviction, which takes from the back,
// still reaches it only after three quarters of the cache are gone.
func (c *Cache) freshLocked(e *entry) bool {
	return c.clock-e.stamp <= uint64(len(c.entries)/4)
}

// frontLocked moves el to the front of the LRU and stamps it.
func (c *Cache) frontLocked(el *list.Element) {
	c.clock++
	el.Value.(*entry).stamp = c.clock
	c.lru.MoveToFront(el)
}

// Set stores a copy of value under key for ttl, evicting least recently used entries to
// stay within MaxBytes.
func (c *Cache) Set(ctx context.Context, key cache.Key, value []byte, ttl time.Duration) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	if len(value) > c.cfg.MaxValueBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", cache.ErrTooLarge, len(value), c.cfg.MaxValueBytes)
	}
	if ttl <= 0 {
		ttl = c.cfg.DefaultTTL
	}
	e := &entry{
		key:     key,
		value:   append([]byte(nil), value...),
		expires: c.now().Add(ttl),
		weight:  int64(len(key.Tenant)+len(key.Hash)+len(value)) + entryOverhead,
	}
	if e.weight > c.cfg.MaxBytes {
		return fmt.Errorf("%w: %d bytes with bookkeeping, cache holds %d", cache.ErrTooLarge, e.weight, c.cfg.MaxBytes)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.removeLocked(el)
	}
	c.clock++
	e.stamp = c.clock
	c.entries[key] = c.lru.PushFront(e)
	c.bytes += e.weight
	for c.bytes > c.cfg.MaxBytes {
		c.removeLocked(c.lru.Back())
	}
	return nil
}

func (c *Cache) removeLocked(el *list.Element) {
	e := c.lru.Remove(el).(*entry)
	delete(c.entries, e.key)
	c.bytes -= e.weight
}

// Bytes returns the bytes currently accounted against MaxBytes.
func (c *Cache) Bytes() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.bytes
}

// Versions reads the tenant's version tokens and those of deps.Tables; a version never
// bumped in this instance reads as the instance's random starting token.
func (c *Cache) Versions(ctx context.Context, tenant string, deps cache.Deps) (cache.Versions, error) {
	if err := c.checkOpen(ctx); err != nil {
		return cache.Versions{}, err
	}
	v := cache.Versions{Epoch: c.base, AllTables: deps.AllTables, Tables: make(map[string]uint64, len(deps.Tables))}
	if deps.AllTables {
		v.Writes = c.base
	}
	c.vmu.RLock()
	defer c.vmu.RUnlock()
	tv := c.tenants[tenant]
	for _, table := range deps.Tables {
		v.Tables[table] = c.base
		if tv != nil {
			if t, ok := tv.tables[table]; ok {
				v.Tables[table] = t
			}
		}
	}
	if tv == nil {
		return v, nil
	}
	v.Epoch = tv.epoch
	if deps.AllTables {
		v.Writes = tv.writes
	}
	return v, nil
}

func (c *Cache) tenantLocked(tenant string) *tenantVersions {
	tv := c.tenants[tenant]
	if tv == nil {
		tv = &tenantVersions{epoch: c.base, writes: c.base, tables: make(map[string]uint64)}
		c.tenants[tenant] = tv
	}
	return tv
}

// BumpTable writes fresh tokens to the version of (tenant, table) and the tenant's write
// version.
func (c *Cache) BumpTable(ctx context.Context, tenant, table string) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	c.vmu.Lock()
	defer c.vmu.Unlock()
	tv := c.tenantLocked(tenant)
	tv.tables[table] = freshToken(tv.tables[table], c.base)
	tv.writes = freshToken(tv.writes, c.base)
	return nil
}

// BumpTenant writes a fresh token to the tenant's epoch.
func (c *Cache) BumpTenant(ctx context.Context, tenant string) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	c.vmu.Lock()
	defer c.vmu.Unlock()
	tv := c.tenantLocked(tenant)
	tv.epoch = freshToken(tv.epoch, c.base)
	return nil
}

// freshToken returns a random token that differs from the current one and the base.
func freshToken(current, base uint64) uint64 {
	for {
		if t := cache.NewToken(); t != current && t != base {
			return t
		}
	}
}

// Health reports a closed breaker and no pending invalidation: nothing can be unreachable.
func (c *Cache) Health() cache.Health {
	return cache.Health{Breaker: cache.BreakerClosed}
}

// Run blocks until ctx is done or the cache is closed; the local cache has no background
// work, since expired entries are dropped when met and evicted under memory pressure.
func (c *Cache) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case <-c.closed:
	}
	return nil
}

// Close drops every entry. It is idempotent.
func (c *Cache) Close(context.Context) error {
	c.once.Do(func() {
		close(c.closed)
		c.mu.Lock()
		c.lru.Init()
		c.entries = make(map[cache.Key]*list.Element)
		c.bytes = 0
		c.mu.Unlock()
	})
	return nil
}
