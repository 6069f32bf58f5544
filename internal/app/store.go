package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/chdbstore"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/store/schemacache"
	"github.com/wavehouse/wavehouse/internal/store/storemetrics"
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
	s, err := storemetrics.Wrap(s, a.reg)
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

// staticTargets maps every tenant to the configured database until tenants own their own.
type staticTargets struct{ database string }

func (t staticTargets) Target(tenant string) (store.Target, error) {
	return store.Target{Tenant: tenant, Database: t.database}, nil
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "\\`") + "`" }
