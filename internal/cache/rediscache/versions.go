package rediscache

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/wavehouse/wavehouse/internal/cache"
)

// pendingKey names an undelivered bump: a table's, or the tenant epoch's when table is
// empty and epoch is set.
type pendingKey struct {
	tenant string
	table  string
	epoch  bool
}

// tenantTag returns "<prefix>{<escaped tenant>}", the start of every key of the tenant.
func (c *Cache) tenantTag(tenant string) string {
	return c.cfg.KeyPrefix + "{" + cache.EscapeTenant(tenant) + "}"
}

func (c *Cache) resultKey(k cache.Key) string   { return c.tenantTag(k.Tenant) + ":r:" + k.Hash }
func (c *Cache) epochKey(tenant string) string  { return c.tenantTag(tenant) + ":e" }
func (c *Cache) writesKey(tenant string) string { return c.tenantTag(tenant) + ":w" }
func (c *Cache) tableKey(tenant, table string) string {
	return c.tenantTag(tenant) + ":t:" + cache.EscapeName(table)
}

// Versions reads the tenant's version tokens and those of deps.Tables with one MGET. A
// token that is missing (never written, deleted, evicted, or lost in a restart) is created
// with a fresh random value by SET NX in a second round trip, never read as 0, so no fill
// filed before the loss can match. It returns cache.ErrUnavailable while a bump it depends
// on is undelivered.
func (c *Cache) Versions(ctx context.Context, tenant string, deps cache.Deps) (cache.Versions, error) {
	if err := c.pendingFor(tenant, deps); err != nil {
		select {
		case <-c.closed:
			return cache.Versions{}, cache.ErrClosed
		default:
		}
		return cache.Versions{}, err
	}
	keys := make([]string, 0, 2+len(deps.Tables))
	keys = append(keys, c.epochKey(tenant), c.writesKey(tenant))
	for _, table := range deps.Tables {
		keys = append(keys, c.tableKey(tenant, table))
	}
	var vals []any
	err := c.do(ctx, func(ctx context.Context) error {
		var err error
		vals, err = c.client.MGet(ctx, keys...).Result()
		return err
	})
	if err != nil {
		return cache.Versions{}, err
	}
	if len(vals) != len(keys) {
		return cache.Versions{}, fmt.Errorf("%w: MGET returned %d values for %d keys", cache.ErrUnavailable, len(vals), len(keys))
	}
	tokens := make([]uint64, len(keys))
	var missing []int
	for i := range keys {
		ok, err := parseToken(keys[i], vals[i])
		if err != nil {
			return cache.Versions{}, err
		}
		if !ok {
			if i != 1 || deps.AllTables { // the write counter only matters to AllTables keys
				missing = append(missing, i)
			}
			continue
		}
		tokens[i], _ = strconv.ParseUint(vals[i].(string), 10, 64)
	}
	if len(missing) > 0 {
		if err := c.createTokens(ctx, keys, missing, tokens); err != nil {
			return cache.Versions{}, err
		}
	}
	v := cache.Versions{Epoch: tokens[0], AllTables: deps.AllTables, Tables: make(map[string]uint64, len(deps.Tables))}
	if deps.AllTables {
		v.Writes = tokens[1]
	}
	for i, table := range deps.Tables {
		v.Tables[table] = tokens[2+i]
	}
	return v, nil
}

// pendingFor returns cache.ErrUnavailable when an undelivered bump affects a lookup of
// deps in tenant.
func (c *Cache) pendingFor(tenant string, deps cache.Deps) error {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if len(c.pending) == 0 {
		return nil
	}
	if _, ok := c.pending[pendingKey{tenant: tenant, epoch: true}]; ok {
		return fmt.Errorf("%w: invalidation of tenant %q not yet delivered", cache.ErrUnavailable, tenant)
	}
	if deps.AllTables {
		for k := range c.pending {
			if k.tenant == tenant {
				return fmt.Errorf("%w: invalidation of table %q not yet delivered", cache.ErrUnavailable, k.table)
			}
		}
	}
	for _, table := range deps.Tables {
		if _, ok := c.pending[pendingKey{tenant: tenant, table: table}]; ok {
			return fmt.Errorf("%w: invalidation of table %q not yet delivered", cache.ErrUnavailable, table)
		}
	}
	return nil
}

// BumpTable advances the table's counter and the tenant's write counter in one
// MULTI/EXEC. If Redis cannot be reached, the bump is remembered for Run and nil is
// returned.
func (c *Cache) BumpTable(ctx context.Context, tenant, table string) error {
	return c.bump(ctx, pendingKey{tenant: tenant, table: table})
}

// BumpTenant advances the tenant's epoch, with the same delivery guarantee as BumpTable.
func (c *Cache) BumpTenant(ctx context.Context, tenant string) error {
	return c.bump(ctx, pendingKey{tenant: tenant, epoch: true})
}

func (c *Cache) bump(ctx context.Context, k pendingKey) error {
	err := c.send(ctx, k)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cache.ErrClosed):
		return err
	}
	// Remember it even when the caller's context ended: the insert it follows happened.
	c.pmu.Lock()
	c.gen++
	c.pending[k] = c.gen
	c.pmu.Unlock()
	c.log.Warn("cache: invalidation queued for retry", "tenant", k.tenant, "table", k.table, "epoch", k.epoch, "error", err.Error())
	return nil
}

// send delivers one bump: it writes fresh random tokens (not INCR, which would restart a
// lost counter at a value an older fill may be filed under).
func (c *Cache) send(ctx context.Context, k pendingKey) error {
	return c.do(ctx, func(ctx context.Context) error {
		_, err := c.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if k.epoch {
				p.Set(ctx, c.epochKey(k.tenant), formatToken(cache.NewToken()), 0)
				return nil
			}
			p.Set(ctx, c.tableKey(k.tenant, k.table), formatToken(cache.NewToken()), 0)
			p.Set(ctx, c.writesKey(k.tenant), formatToken(cache.NewToken()), 0)
			return nil
		})
		return err
	})
}

// parseToken reports whether val (an MGET reply for key) holds a token; nil means missing.
func parseToken(key string, val any) (bool, error) {
	switch v := val.(type) {
	case nil:
		return false, nil
	case string:
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			return false, fmt.Errorf("%w: version %s holds %q", cache.ErrUnavailable, key, v)
		}
		return true, nil
	}
	return false, fmt.Errorf("%w: version %s holds a %T", cache.ErrUnavailable, key, val)
}

func formatToken(t uint64) string { return strconv.FormatUint(t, 10) }

// createTokens writes a fresh random token to each missing key with SET NX and reads back
// the token that won (another process may have created or bumped it meanwhile), in one
// MULTI/EXEC: the keys share the tenant's hash slot.
func (c *Cache) createTokens(ctx context.Context, keys []string, missing []int, tokens []uint64) error {
	gets := make([]*redis.StringCmd, len(missing))
	err := c.do(ctx, func(ctx context.Context) error {
		_, err := c.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for j, i := range missing {
				p.SetNX(ctx, keys[i], formatToken(cache.NewToken()), 0)
				gets[j] = p.Get(ctx, keys[i])
			}
			return nil
		})
		return err
	})
	if err != nil {
		if errors.Is(err, redis.Nil) {
			return fmt.Errorf("%w: a version created by SET NX read back as missing", cache.ErrUnavailable)
		}
		return err
	}
	for j, i := range missing {
		n, err := strconv.ParseUint(gets[j].Val(), 10, 64)
		if err != nil {
			return fmt.Errorf("%w: version %s holds %q", cache.ErrUnavailable, keys[i], gets[j].Val())
		}
		tokens[i] = n
	}
	return nil
}

// flushPending retries every undelivered bump once. A bump re-queued while its retry
// was in flight keeps its place: its insert may have happened after the retry landed.
func (c *Cache) flushPending(ctx context.Context) {
	c.pmu.Lock()
	snapshot := make(map[pendingKey]uint64, len(c.pending))
	for k, g := range c.pending {
		snapshot[k] = g
	}
	c.pmu.Unlock()
	for k, g := range snapshot {
		if err := c.send(ctx, k); err != nil {
			return // the breaker makes the next attempts fail fast; try again next tick
		}
		c.pmu.Lock()
		if c.pending[k] == g {
			delete(c.pending, k)
		}
		c.pmu.Unlock()
	}
}
