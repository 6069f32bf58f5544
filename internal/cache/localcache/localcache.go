// Package localcache is the in-process cache backend (cache.backend: local): results in a
// byte-bounded LRU with per-entry TTL, and version counters in memory. It is per process:
// two instances never see each other's entries or bumps.
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

	mu      sync.Mutex
	lru     *list.List // of *entry, most recent at the front
	entries map[string]*list.Element
	bytes   int64

	vmu     sync.Mutex
	tenants map[string]*tenantVersions
}

type entry struct {
	key     string
	value   []byte
	expires time.Time
	weight  int64
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
		entries: make(map[string]*list.Element),
		tenants: make(map[string]*tenantVersions),
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
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	k := key.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[k]
	if !ok {
		return nil, cache.ErrMiss
	}
	e := el.Value.(*entry)
	if !c.now().Before(e.expires) {
		c.removeLocked(el)
		return nil, cache.ErrMiss
	}
	c.lru.MoveToFront(el)
	return append([]byte(nil), e.value...), nil
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
	k := key.String()
	e := &entry{
		key:     k,
		value:   append([]byte(nil), value...),
		expires: c.now().Add(ttl),
		weight:  int64(len(k)+len(value)) + entryOverhead,
	}
	if e.weight > c.cfg.MaxBytes {
		return fmt.Errorf("%w: %d bytes with bookkeeping, cache holds %d", cache.ErrTooLarge, e.weight, c.cfg.MaxBytes)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok {
		c.removeLocked(el)
	}
	c.entries[k] = c.lru.PushFront(e)
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
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Versions reads the tenant's counters and those of deps.Tables.
func (c *Cache) Versions(ctx context.Context, tenant string, deps cache.Deps) (cache.Versions, error) {
	if err := c.checkOpen(ctx); err != nil {
		return cache.Versions{}, err
	}
	v := cache.Versions{AllTables: deps.AllTables, Tables: make(map[string]uint64, len(deps.Tables))}
	c.vmu.Lock()
	defer c.vmu.Unlock()
	tv := c.tenants[tenant]
	for _, table := range deps.Tables {
		v.Tables[table] = 0
	}
	if tv == nil {
		return v, nil
	}
	v.Epoch = tv.epoch
	if deps.AllTables {
		v.Writes = tv.writes
	}
	for _, table := range deps.Tables {
		v.Tables[table] = tv.tables[table]
	}
	return v, nil
}

func (c *Cache) tenantLocked(tenant string) *tenantVersions {
	tv := c.tenants[tenant]
	if tv == nil {
		tv = &tenantVersions{tables: make(map[string]uint64)}
		c.tenants[tenant] = tv
	}
	return tv
}

// BumpTable advances the version of (tenant, table) and the tenant's write counter.
func (c *Cache) BumpTable(ctx context.Context, tenant, table string) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	c.vmu.Lock()
	defer c.vmu.Unlock()
	tv := c.tenantLocked(tenant)
	tv.tables[table]++
	tv.writes++
	return nil
}

// BumpTenant advances the tenant's epoch.
func (c *Cache) BumpTenant(ctx context.Context, tenant string) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	c.vmu.Lock()
	defer c.vmu.Unlock()
	c.tenantLocked(tenant).epoch++
	return nil
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
		c.entries = make(map[string]*list.Element)
		c.bytes = 0
		c.mu.Unlock()
	})
	return nil
}
