// Package schemacache caches table schemas read through a store.SchemaReader, per
// (tenant, database, table), so validation does not read system.columns on every request.
//
// An entry is read on a miss, re-read when older than MaxAge, and dropped by Invalidate (after
// an insert error that means the schema changed, or DDL). Refresh forces a re-read, for a
// validator that meets a field the cached schema does not know. Concurrent misses for the same
// table share one read. Failed reads are not cached, so a table created a moment ago is found
// on the next call.
//
// While the server is unreachable (a transient read error) the cache keeps validation going
// with the last known schema: the entry it holds, else the one kept in the Backing (the queue's
// schema bucket, written through on every successful read by any process), so a process that
// boots during an outage still validates the tables any process read before. Such a schema is
// served for Retry before the server is tried again. A table no one has read before stays an
// error (the transient one: "try later", never "unknown table").
package schemacache

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/wavehouse/wavehouse/internal/store"
)

// Backing keeps encoded schemas outside the process, where every process of the deployment
// reads them. It must be safe for concurrent use.
type Backing interface {
	// Save stores schema as the latest of target's table.
	Save(ctx context.Context, target store.Target, table string, schema []byte) error
	// Load returns the latest stored schema of target's table; found is false when none is.
	Load(ctx context.Context, target store.Target, table string) (schema []byte, found bool, err error)
}

// Options tune the cache.
type Options struct {
	// MaxAge is how long an entry is served before it is re-read; 0 means 1 minute.
	MaxAge time.Duration
	// Retry is how long a schema served because the server is unreachable is served before the
	// server is tried again; 0 means 1 second.
	Retry time.Duration
	// Backing, when set, receives every schema read from the store and answers for tables this
	// process has not read while the store is unreachable.
	Backing Backing
	// BackingTimeout bounds one Backing call; 0 means 2 seconds.
	BackingTimeout time.Duration
	// Log receives Backing failures; nil discards them.
	Log *slog.Logger
	// Now is the clock; nil means time.Now. Tests inject one.
	Now func() time.Time
}

type key struct{ tenant, database, table string }

type entry struct {
	cols    []store.Column
	expires time.Time
}

// saved is what this process last wrote to the Backing for a key, and when.
type saved struct {
	schema string
	at     time.Time
}

// Cache is a schema cache. It is safe for concurrent use.
type Cache struct {
	r    store.SchemaReader
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	entries map[key]entry
	gen     map[key]uint64
	saved   map[key]saved
	sf      singleflight.Group
}

var _ store.SchemaReader = (*Cache)(nil)

// New returns a cache reading through r.
func New(r store.SchemaReader, opts Options) *Cache {
	if opts.MaxAge <= 0 {
		opts.MaxAge = time.Minute
	}
	if opts.Retry <= 0 {
		opts.Retry = time.Second
	}
	if opts.BackingTimeout <= 0 {
		opts.BackingTimeout = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Cache{r: r, opts: opts, log: log, entries: map[key]entry{}, gen: map[key]uint64{}, saved: map[key]saved{}}
}

// Columns returns the cached columns of the table, reading them on a miss or when stale. The
// returned slice is shared: callers must not modify it.
func (c *Cache) Columns(ctx context.Context, target store.Target, table string) ([]store.Column, error) {
	k := key{target.Tenant, target.Database, table}
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	if ok && c.opts.Now().Before(e.expires) {
		return e.cols, nil
	}
	cols, err := c.load(ctx, k, target, table)
	if err == nil || !store.IsTransient(err) {
		return cols, err
	}
	// The server is unreachable: keep validating with the last known schema, so that ingest
	// keeps accepting into the queue while inserts back off.
	if ok {
		c.keepUntilRetry(k, e.cols)
		return e.cols, nil
	}
	if kept, found := c.fromBacking(ctx, target, table); found {
		c.keepUntilRetry(k, kept)
		return kept, nil
	}
	return nil, err
}

// Refresh re-reads the table's columns now and caches them. When the read fails transiently the
// entry held so far stays (Columns keeps serving it); a definite answer (the table is gone)
// drops it.
func (c *Cache) Refresh(ctx context.Context, target store.Target, table string) ([]store.Column, error) {
	k := key{target.Tenant, target.Database, table}
	c.mu.Lock()
	c.gen[k]++
	c.mu.Unlock()
	c.sf.Forget(sfKey(k))
	cols, err := c.load(ctx, k, target, table)
	if err != nil && !store.IsTransient(err) {
		c.Invalidate(target, table)
	}
	return cols, err
}

// Invalidate drops the table's entry; the next Columns reads it again. A read already in flight
// when Invalidate is called is not cached.
func (c *Cache) Invalidate(target store.Target, table string) {
	k := key{target.Tenant, target.Database, table}
	c.mu.Lock()
	delete(c.entries, k)
	c.gen[k]++
	c.mu.Unlock()
	c.sf.Forget(sfKey(k))
}

// InvalidateDatabase drops every entry of the target's database (after operator DDL).
func (c *Cache) InvalidateDatabase(target store.Target) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if k.tenant == target.Tenant && k.database == target.Database {
			delete(c.entries, k)
			c.gen[k]++
			c.sf.Forget(sfKey(k))
		}
	}
}

func sfKey(k key) string { return k.tenant + "\x00" + k.database + "\x00" + k.table }

// keepUntilRetry caches cols, served while the server is unreachable, until the next retry.
func (c *Cache) keepUntilRetry(k key, cols []store.Column) {
	c.mu.Lock()
	c.entries[k] = entry{cols: cols, expires: c.opts.Now().Add(c.opts.Retry)}
	c.mu.Unlock()
}

func (c *Cache) load(ctx context.Context, k key, target store.Target, table string) ([]store.Column, error) {
	ch := c.sf.DoChan(sfKey(k), func() (any, error) {
		c.mu.Lock()
		gen := c.gen[k]
		c.mu.Unlock()
		// The read must not be cut short by whichever caller happened to start it.
		rctx := context.WithoutCancel(ctx)
		cols, err := c.r.Columns(rctx, target, table)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.gen[k] == gen {
			c.entries[k] = entry{cols: cols, expires: c.opts.Now().Add(c.opts.MaxAge)}
		}
		c.mu.Unlock()
		c.save(rctx, k, target, table, cols)
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

// save writes cols through to the Backing. A schema this process saved less than MaxAge ago is
// not written again (a refresh storm costs no writes); a failed write is logged and the read
// still succeeds: the Backing only matters during a later outage.
func (c *Cache) save(ctx context.Context, k key, target store.Target, table string, cols []store.Column) {
	if c.opts.Backing == nil {
		return
	}
	b, err := Encode(cols)
	if err != nil {
		c.log.Warn("schema cache: encoding a schema failed", "database", target.Database, "table", table, "error", err)
		return
	}
	now := c.opts.Now()
	c.mu.Lock()
	last, ok := c.saved[k]
	c.mu.Unlock()
	if ok && last.schema == string(b) && now.Sub(last.at) < c.opts.MaxAge {
		return
	}
	bctx, cancel := context.WithTimeout(ctx, c.opts.BackingTimeout)
	defer cancel()
	if err := c.opts.Backing.Save(bctx, target, table, b); err != nil {
		c.log.Warn("schema cache: keeping the schema in the queue failed; a process that boots while the store is down will not know it",
			"tenant", target.Tenant, "database", target.Database, "table", table, "error", err)
		return
	}
	c.mu.Lock()
	c.saved[k] = saved{schema: string(b), at: now}
	c.mu.Unlock()
}

// fromBacking returns the schema kept in the Backing for the table, if any.
func (c *Cache) fromBacking(ctx context.Context, target store.Target, table string) ([]store.Column, bool) {
	if c.opts.Backing == nil {
		return nil, false
	}
	bctx, cancel := context.WithTimeout(ctx, c.opts.BackingTimeout)
	defer cancel()
	b, found, err := c.opts.Backing.Load(bctx, target, table)
	if err != nil {
		c.log.Warn("schema cache: reading the kept schema failed", "tenant", target.Tenant, "database", target.Database, "table", table, "error", err)
		return nil, false
	}
	if !found {
		return nil, false
	}
	cols, err := Decode(b)
	if err != nil {
		c.log.Warn("schema cache: the kept schema does not decode", "tenant", target.Tenant, "database", target.Database, "table", table, "error", err)
		return nil, false
	}
	return cols, true
}
