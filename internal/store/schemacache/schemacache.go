// Package schemacache caches table schemas read through a store.SchemaReader, per
// (tenant, database, table), so validation does not read system.columns on every request.
//
// An entry is read on a miss, re-read when older than MaxAge (served stale while that re-read
// fails transiently, so an unreachable server does not stop validation), and dropped by Invalidate (after
// an insert error that means the schema changed, or DDL). Refresh forces a re-read, for a
// validator that meets a field the cached schema does not know. Concurrent misses for the same
// table share one read. Failed reads are not cached, so a table created a moment ago is found
// on the next call.
package schemacache

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/wavehouse/wavehouse/internal/store"
)

// Options tune the cache.
type Options struct {
	// MaxAge is how long an entry is served before it is re-read; 0 means 1 minute.
	MaxAge time.Duration
	// Now is the clock; nil means time.Now. Tests inject one.
	Now func() time.Time
}

type key struct{ tenant, database, table string }

type entry struct {
	cols []store.Column
	at   time.Time
	gen  uint64
}

// Cache is a schema cache. It is safe for concurrent use.
type Cache struct {
	r      store.SchemaReader
	maxAge time.Duration
	now    func() time.Time

	mu      sync.Mutex
	entries map[key]entry
	gen     map[key]uint64
	sf      singleflight.Group
}

var _ store.SchemaReader = (*Cache)(nil)

// New returns a cache reading through r.
func New(r store.SchemaReader, opts Options) *Cache {
	if opts.MaxAge <= 0 {
		opts.MaxAge = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Cache{r: r, maxAge: opts.MaxAge, now: opts.Now, entries: map[key]entry{}, gen: map[key]uint64{}}
}

// Columns returns the cached columns of the table, reading them on a miss or when stale. The
// returned slice is shared: callers must not modify it.
func (c *Cache) Columns(ctx context.Context, target store.Target, table string) ([]store.Column, error) {
	k := key{target.Tenant, target.Database, table}
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	if ok && c.now().Sub(e.at) < c.maxAge {
		return e.cols, nil
	}
	cols, err := c.load(ctx, k, target, table)
	if err != nil && ok && store.IsTransient(err) {
		// The server is unreachable: keep validating with the schema last read, so that ingest
		// keeps accepting into the queue while inserts back off.
		return e.cols, nil
	}
	return cols, err
}

// Refresh re-reads the table's columns now and caches them.
func (c *Cache) Refresh(ctx context.Context, target store.Target, table string) ([]store.Column, error) {
	c.Invalidate(target, table)
	return c.load(ctx, key{target.Tenant, target.Database, table}, target, table)
}

// Invalidate drops the table's entry; the next Columns reads it again. A read already in flight
// when Invalidate is called is not cached.
func (c *Cache) Invalidate(target store.Target, table string) {
	k := key{target.Tenant, target.Database, table}
	c.mu.Lock()
	delete(c.entries, k)
	c.gen[k]++
	c.mu.Unlock()
	c.sf.Forget(k.tenant + "\x00" + k.database + "\x00" + k.table)
}

// InvalidateDatabase drops every entry of the target's database (after operator DDL).
func (c *Cache) InvalidateDatabase(target store.Target) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if k.tenant == target.Tenant && k.database == target.Database {
			delete(c.entries, k)
			c.gen[k]++
			c.sf.Forget(k.tenant + "\x00" + k.database + "\x00" + k.table)
		}
	}
}

func (c *Cache) load(ctx context.Context, k key, target store.Target, table string) ([]store.Column, error) {
	sfKey := k.tenant + "\x00" + k.database + "\x00" + k.table
	ch := c.sf.DoChan(sfKey, func() (any, error) {
		c.mu.Lock()
		gen := c.gen[k]
		c.mu.Unlock()
		// The read must not be cut short by whichever caller happened to start it.
		cols, err := c.r.Columns(context.WithoutCancel(ctx), target, table)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.gen[k] == gen {
			c.entries[k] = entry{cols: cols, at: c.now(), gen: gen}
		}
		c.mu.Unlock()
		return cols, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.([]store.Column), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
