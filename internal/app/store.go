package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/ops"

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
	prepare := func(ctx context.Context) error {
		if a.database != "default" {
			// The tenant's database must exist before tables can be created in it.
			if err := s.Exec(ctx, store.Target{Database: "default"}, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(a.database)); err != nil {
				return fmt.Errorf("create database %s: %w", a.database, err)
			}
		}
		return s.Ping(ctx, store.Target{Database: a.database})
	}
	if a.cfg.Store.Backend != "clickhouse" {
		// chDB is in-process: it cannot be unreachable, and a failure to open it is fatal.
		a.schema = schemacache.New(s, schemacache.Options{})
		return newComponent(compStore, prepare, nil, s.Close), nil
	}
	// A ClickHouse server can be down when the process boots: the schemas every process read
	// are kept in the queue, so validation (and durable acceptance) goes on without it.
	opts := schemacache.Options{Log: a.log.With("component", compStore)}
	if qs, ok := a.queue.(mq.Schemas); ok {
		opts.Backing = queueSchemas{qs}
	}
	a.schema = schemacache.New(s, opts)
	h := &storeHealth{
		prepare:   prepare,
		ping:      func(ctx context.Context) error { return s.Ping(ctx, store.Target{Database: a.database}) },
		readiness: a.readiness,
		log:       a.log.With("component", compStore),
	}
	return newComponent(compStore, h.start, h.run, s.Close), nil
}

// The store health probe: while the server is unreachable it is tried every storeRetryInterval,
// while it is reachable it is pinged every storeProbeInterval, so /readyz notices an outage.
const (
	storeRetryInterval = time.Second
	storeProbeInterval = 5 * time.Second
	storeProbeTimeout  = 5 * time.Second
)

// storeHealth lets a process boot while its ClickHouse server is unreachable and reports the
// server's state on /readyz ("degraded": {"store": "unavailable: …"}). start and run are called
// one after the other by the lifecycle, so its fields need no lock.
type storeHealth struct {
	// prepare creates the configured database and pings; it runs until it succeeded once.
	prepare   func(ctx context.Context) error
	ping      func(ctx context.Context) error
	readiness *ops.Readiness
	log       *slog.Logger

	prepared bool
	down     bool
}

// start prepares the store. A transient failure (the server is down or refuses the gateway's
// credentials) does not fail boot: the store is reported degraded and run keeps trying. Any other
// failure does.
func (h *storeHealth) start(ctx context.Context) error {
	err := h.probe(ctx, h.prepare)
	if err == nil {
		h.prepared = true
		return nil
	}
	if !store.IsTransient(err) {
		return err
	}
	h.log.Warn("store unreachable at boot: accepting into the queue against the last known schemas; queries answer 503 until it returns",
		"error", err)
	h.degrade(err)
	return nil
}

// run probes the store until ctx ends.
func (h *storeHealth) run(ctx context.Context) error {
	t := time.NewTimer(h.interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		op := h.ping
		if !h.prepared {
			op = h.prepare
		}
		err := h.probe(ctx, op)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			if !h.down {
				h.log.Warn("store unreachable: accepting into the queue; inserts back off, queries answer 503", "error", err)
			}
			h.degrade(err)
		default:
			h.prepared = true
			if h.down {
				h.down = false
				h.readiness.Restore(compStore)
				h.log.Info("store reachable again")
			}
		}
		t.Reset(h.interval())
	}
}

func (h *storeHealth) interval() time.Duration {
	if h.down {
		return storeRetryInterval
	}
	return storeProbeInterval
}

func (h *storeHealth) probe(ctx context.Context, op func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, storeProbeTimeout)
	defer cancel()
	return op(ctx)
}

// degrade reports the store on /readyz as "unavailable: <cause>".
func (h *storeHealth) degrade(err error) {
	h.down = true
	h.readiness.Degrade(compStore, "unavailable: "+strings.Replace(err.Error(), store.ErrUnavailable.Error()+": ", "", 1))
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
