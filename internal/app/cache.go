package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/cachemetrics"
	"github.com/wavehouse/wavehouse/internal/cache/localcache"
	"github.com/wavehouse/wavehouse/internal/cache/rediscache"
)

// buildCache creates the selected result cache. Boot never waits for Redis: a cache that is down
// means misses, never failed queries.
func buildCache(e env) (cache.Cache, Component, error) {
	var c cache.Cache
	switch cc := e.cfg.Cache; cc.Backend {
	case "local":
		lc, err := localcache.New(localcache.Config{MaxBytes: cc.Local.MaxBytes}, localcache.Deps{})
		if err != nil {
			return nil, nil, err
		}
		c = lc
	case "redis":
		r := cc.Redis
		cfg := rediscache.Config{
			Addrs: r.Addrs, Cluster: r.Cluster, Username: r.Username, PasswordFile: r.PasswordFile, DB: r.DB,
			KeyPrefix: r.KeyPrefix, Timeout: r.Timeout.D(),
			TLS: rediscache.TLSConfig{Enabled: r.TLS.Enabled, CAFile: r.TLS.CAFile, CertFile: r.TLS.CertFile, KeyFile: r.TLS.KeyFile, InsecureSkipVerify: r.TLS.InsecureSkipVerify},
		}
		rc, err := rediscache.New(cfg, rediscache.Deps{Logger: e.log, Breakers: e.breakers})
		if err != nil {
			return nil, nil, err
		}
		c = rc
	default:
		return nil, nil, fmt.Errorf("cache.backend %q is not built in", cc.Backend)
	}
	wrapped, err := cachemetrics.Wrap(c, e.cfg.Cache.Backend, e.reg)
	if err != nil {
		return nil, nil, err
	}
	return wrapped, newComponent(compCache, nil, c.Run, c.Close), nil
}

// cacheInvalidator bumps cache versions after inserts and operator SQL. A failed bump is the
// cache's to retry (it remembers it and bypasses affected lookups), so errors are only logged. A
// process without a cache has nothing to bump.
type cacheInvalidator struct {
	cache cache.Cache
	log   *slog.Logger
}

func (ci cacheInvalidator) BumpTable(ctx context.Context, tenant, table string) {
	if ci.cache == nil {
		return
	}
	if err := ci.cache.BumpTable(ctx, tenant, table); err != nil {
		ci.log.Warn("cache version bump failed", "tenant", tenant, "table", table, "error", err)
	}
}

func (ci cacheInvalidator) BumpTenant(ctx context.Context, tenant string) {
	if ci.cache == nil {
		return
	}
	if err := ci.cache.BumpTenant(ctx, tenant); err != nil {
		ci.log.Warn("cache tenant bump failed", "tenant", tenant, "error", err)
	}
}
