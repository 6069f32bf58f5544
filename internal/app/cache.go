package app

import (
	"context"
	"fmt"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/cachemetrics"
	"github.com/wavehouse/wavehouse/internal/cache/localcache"
	"github.com/wavehouse/wavehouse/internal/cache/rediscache"
)

// buildCache creates the selected result cache. Boot never waits for Redis: a cache that is down
// means misses, never failed queries.
func (a *App) buildCache() (Component, error) {
	var c cache.Cache
	switch cc := a.cfg.Cache; cc.Backend {
	case "local":
		lc, err := localcache.New(localcache.Config{MaxBytes: cc.Local.MaxBytes}, localcache.Deps{})
		if err != nil {
			return nil, err
		}
		c = lc
	case "redis":
		r := cc.Redis
		cfg := rediscache.Config{
			Addrs: r.Addrs, Cluster: r.Cluster, Username: r.Username, PasswordFile: r.PasswordFile, DB: r.DB,
			KeyPrefix: r.KeyPrefix, Timeout: r.Timeout.D(),
			TLS: rediscache.TLSConfig{Enabled: r.TLS.Enabled, CAFile: r.TLS.CAFile, CertFile: r.TLS.CertFile, KeyFile: r.TLS.KeyFile, InsecureSkipVerify: r.TLS.InsecureSkipVerify},
		}
		rc, err := rediscache.New(cfg, rediscache.Deps{Logger: a.log, Breakers: a.breakers})
		if err != nil {
			return nil, err
		}
		c = rc
	default:
		return nil, fmt.Errorf("cache.backend %q is not built in", cc.Backend)
	}
	wrapped, err := cachemetrics.Wrap(c, a.cfg.Cache.Backend, a.reg)
	if err != nil {
		return nil, err
	}
	a.cache = wrapped
	return newComponent(compCache, nil, c.Run, c.Close), nil
}

// cacheInvalidator bumps cache versions after inserts and operator SQL. A failed bump is the
// cache's to retry (it remembers it and bypasses affected lookups), so errors are only logged.
type cacheInvalidator struct{ a *App }

func (ci cacheInvalidator) BumpTable(ctx context.Context, tenant, table string) {
	if ci.a.cache == nil {
		return
	}
	if err := ci.a.cache.BumpTable(ctx, tenant, table); err != nil {
		ci.a.log.Warn("cache version bump failed", "tenant", tenant, "table", table, "error", err)
	}
}

func (ci cacheInvalidator) BumpTenant(ctx context.Context, tenant string) {
	if ci.a.cache == nil {
		return
	}
	if err := ci.a.cache.BumpTenant(ctx, tenant); err != nil {
		ci.a.log.Warn("cache tenant bump failed", "tenant", tenant, "error", err)
	}
}
