package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/wavehouse/wavehouse/internal/settings"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/chdbstore"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/store/schemacache"
	"github.com/wavehouse/wavehouse/internal/store/storemetrics"
	"github.com/wavehouse/wavehouse/internal/store/tenantstore"
)

// buildStore opens the selected store backend and the schema cache in front of it.
func (a *App) buildStore() (Component, error) {
	var s store.Store
	switch c := a.cfg.Store; c.Backend {
	case "chdb":
		st, err := chdbstore.New(chdbstore.Config{Path: c.CHDB.Path, LibPath: c.CHDB.LibPath}, chdbstore.Deps{Logger: a.log})
		if err != nil {
			return nil, err
		}
		s = st
		a.database = "default"
	case "clickhouse":
		ch := c.ClickHouse
		cfg := clickhousestore.Config{
			DialTimeout:  ch.DialTimeout.D(),
			MaxOpenConns: ch.MaxOpenConns,
		}
		cfg.Addr = ch.Addrs
		cfg.Username = ch.User
		cfg.PasswordFile = ch.PasswordFile
		cfg.TLS = clickhousestore.TLSConfig{Enabled: ch.TLS.Enabled, CAFile: ch.TLS.CAFile, CertFile: ch.TLS.CertFile, KeyFile: ch.TLS.KeyFile, InsecureSkipVerify: ch.TLS.InsecureSkipVerify}
		st, err := clickhousestore.New(cfg, clickhousestore.Deps{Logger: a.log})
		if err != nil {
			return nil, err
		}
		s = st
		a.database = ch.Database
	default:
		return nil, fmt.Errorf("store.backend %q is not built in", c.Backend)
	}
	a.router = tenantstore.New(s, a.openTenantStore, a.log.With("component", compStore))
	s, err := storemetrics.Wrap(a.router, a.reg)
	if err != nil {
		return nil, err
	}
	a.store = s
	a.schema = schemacache.New(s, schemacache.Options{})
	start := func(ctx context.Context) error {
		if a.database != "default" {
			// The tenant's database must exist before tables can be created in it.
			if err := s.Exec(ctx, store.Target{Database: "default"}, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(a.database)); err != nil {
				return fmt.Errorf("create database %s: %w", a.database, err)
			}
		}
		return s.Ping(ctx, store.Target{Database: a.database})
	}
	return newComponent(compStore, start, nil, s.Close), nil
}

// openTenantStore opens the store of a tenant whose settings name its own ClickHouse server:
// the boot clickhouse settings (timeouts, pool size, TLS) with the tenant's addresses and
// credentials. It connects on first use.
func (a *App) openTenantStore(tenant string, t settings.Target) (store.Store, error) {
	ch := a.cfg.Store.ClickHouse
	cfg := clickhousestore.Config{DialTimeout: ch.DialTimeout.D(), MaxOpenConns: ch.MaxOpenConns}
	cfg.Addr = t.Addrs
	cfg.Username = t.User
	cfg.PasswordFile = t.PasswordFile
	cfg.TLS = clickhousestore.TLSConfig{Enabled: ch.TLS.Enabled, CAFile: ch.TLS.CAFile, CertFile: ch.TLS.CertFile, KeyFile: ch.TLS.KeyFile, InsecureSkipVerify: ch.TLS.InsecureSkipVerify}
	return clickhousestore.New(cfg, clickhousestore.Deps{Logger: a.log.With("tenant", tenant)})
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "\\`") + "`" }
