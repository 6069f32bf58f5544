package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/mq"

	"github.com/wavehouse/wavehouse/internal/settings"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/chdbstore"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/store/schemacache"
	"github.com/wavehouse/wavehouse/internal/store/storemetrics"
	"github.com/wavehouse/wavehouse/internal/store/tenantstore"
)

// storeLayer is the store as the features use it: the backend behind the tenant router (tenants
// with their own ClickHouse) and the metrics wrapper, and the boot database.
type storeLayer struct {
	store    store.Store
	router   *tenantstore.Router
	database string
	// server is true for a ClickHouse server (which can be down), false for in-process chDB.
	server bool
}

// buildStore opens the selected store backend.
func buildStore(e env) (storeLayer, Component, error) {
	var (
		s      store.Store
		sl     storeLayer
		report *clickhousestore.Store
	)
	switch c := e.cfg.Store; c.Backend {
	case "chdb":
		st, err := chdbstore.New(chdbstore.Config{Path: c.CHDB.Path, LibPath: c.CHDB.LibPath, MaxMemoryBytes: c.CHDB.MaxMemoryBytes}, chdbstore.Deps{Logger: e.log})
		if err != nil {
			return sl, nil, err
		}
		s = st
		sl.database = "default"
	case "clickhouse":
		cc := clickhouseConfig(e.cfg, c.ClickHouse.Addrs, c.ClickHouse.User, c.ClickHouse.PasswordFile)
		cc.Cluster = clickhousestore.Cluster{Name: c.ClickHouse.Cluster.Name, Insert: c.ClickHouse.Cluster.Insert, Shards: c.ClickHouse.Cluster.Shards.Addrs()}
		st, err := clickhousestore.New(cc, clickhousestore.Deps{Logger: e.log, Breakers: e.breakers})
		if err != nil {
			return sl, nil, err
		}
		s, report = st, st
		sl.database, sl.server = c.ClickHouse.Database, true
		if len(c.ClickHouse.HTTPAddrs) == 0 {
			e.log.Warn("store.clickhouse.http_addrs is not set: inserts take the native protocol, which converts every queued RowBinary value first; " +
				"set it to the server's HTTP interface (usually port 8123) to send the rows as they are")
		}
	default:
		return sl, nil, fmt.Errorf("store.backend %q is not built in", c.Backend)
	}
	sl.router = tenantstore.New(s, openTenantStore(e), e.log.With("component", compStore))
	s, err := storemetrics.Wrap(sl.router, e.reg)
	if err != nil {
		return sl, nil, err
	}
	sl.store = s
	database := sl.database
	prepare := func(ctx context.Context) error {
		if database != "default" {
			// The tenant's database must exist before tables can be created in it.
			if err := s.Exec(ctx, store.Target{Database: "default"}, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(database)); err != nil {
				return fmt.Errorf("create database %s: %w", database, err)
			}
		}
		if err := s.Ping(ctx, store.Target{Database: database}); err != nil {
			return err
		}
		if report != nil {
			return reportTables(ctx, report, store.Target{Database: database}, e.log.With("component", compStore))
		}
		return nil
	}
	if !sl.server {
		// chDB is in-process: it cannot be unreachable, and a failure to open it is fatal.
		return sl, newComponent(compStore, prepare, nil, s.Close), nil
	}
	h := &backendHealth{
		comp:      compStore,
		transient: store.IsTransient,
		cause:     store.ErrUnavailable,
		bootWarn:  "store unreachable at boot: accepting into the queue against the last known schemas; queries answer 503 until it returns",
		downWarn:  "store unreachable: accepting into the queue; inserts back off, queries answer 503",
		prepare:   prepare,
		ping:      func(ctx context.Context) error { return s.Ping(ctx, store.Target{Database: database}) },
		readiness: e.readiness,
		log:       e.log.With("component", compStore),
	}
	return sl, newComponent(compStore, h.start, h.run, s.Close), nil
}

// reportTables says at boot how inserts reach each table of the boot database and which
// mechanism keeps a redelivered batch from being stored twice; it fails boot when insert mode
// local cannot route a Distributed table itself.
func reportTables(ctx context.Context, st *clickhousestore.Store, target store.Target, log *slog.Logger) error {
	tables, err := st.Report(ctx, target)
	for _, t := range tables {
		attrs := []any{"database", target.Database, "table", t.Table, "engine", t.Engine, "insert", t.Insert, "deduplication", t.Dedup}
		if t.Local != "" {
			attrs = append(attrs, "local_table", t.Local, "sharding_key", t.ShardingKey)
		}
		if t.Problem != "" {
			attrs = append(attrs, "through_distributed_because", t.Problem)
		}
		log.Info("table", attrs...)
	}
	return err
}

// buildSchemaCache puts the schema cache in front of the store. A ClickHouse server can be down
// when the process boots: the schemas every process read are kept in the queue (when it has a
// schema bucket), so validation (and durable acceptance) goes on without it.
func buildSchemaCache(e env, sl storeLayer, queue mq.Queue) *schemacache.Cache {
	if !sl.server {
		return schemacache.New(sl.store, schemacache.Options{})
	}
	opts := schemacache.Options{Log: e.log.With("component", compStore)}
	if qs, ok := queue.(mq.Schemas); ok {
		opts.Backing = queueSchemas{qs}
	}
	return schemacache.New(sl.store, opts)
}

// queueSchemas keeps the schema cache's schemas in the queue's schema bucket.
type queueSchemas struct{ s mq.Schemas }

func (q queueSchemas) Save(ctx context.Context, target store.Target, table string, schema []byte) error {
	return q.s.PutSchema(ctx, mq.SchemaKey{Tenant: target.Tenant, Database: target.Database, Table: table}, schema)
}

func (q queueSchemas) Load(ctx context.Context, target store.Target, table string) ([]byte, bool, error) {
	b, err := q.s.GetSchema(ctx, mq.SchemaKey{Tenant: target.Tenant, Database: target.Database, Table: table})
	if errors.Is(err, mq.ErrNotFound) {
		return nil, false, nil
	}
	return b, err == nil, err
}

// openTenantStore opens the store of a tenant whose settings name its own ClickHouse server:
// the boot clickhouse settings (timeouts, pool size, TLS) with the tenant's addresses and
// credentials. It connects on first use.
func openTenantStore(e env) tenantstore.Opener {
	return func(tenant string, t settings.Target) (store.Store, error) {
		return clickhousestore.New(clickhouseConfig(e.cfg, t.Addrs, t.User, t.PasswordFile), clickhousestore.Deps{Logger: e.log.With("tenant", tenant)})
	}
}

// clickhouseConfig is the boot clickhouse settings (timeouts, pool size, TLS) with these
// addresses and credentials.
func clickhouseConfig(cfg config.Config, addrs []string, user, passwordFile string) clickhousestore.Config {
	ch := cfg.Store.ClickHouse
	c := clickhousestore.Config{DialTimeout: ch.DialTimeout.D(), MaxOpenConns: ch.MaxOpenConns}
	c.Addr = addrs
	if slices.Equal(addrs, ch.Addrs) {
		c.HTTPAddr = ch.HTTPAddrs // a tenant naming its own server has no HTTP address: native inserts
	}
	c.Username = user
	c.PasswordFile = passwordFile
	c.TLS = clickhousestore.TLSConfig{Enabled: ch.TLS.Enabled, CAFile: ch.TLS.CAFile, CertFile: ch.TLS.CertFile, KeyFile: ch.TLS.KeyFile, InsecureSkipVerify: ch.TLS.InsecureSkipVerify}
	return c
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "\\`") + "`" }
