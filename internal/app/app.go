// Package app wires a wavehouse process: it is the only package that knows the concrete
// backends. One file per layer holds that layer's switch; roles.go says which components each
// role needs and in which order they start and stop.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/api"
	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/breaker"
	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/coord"
	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/ingest/commits"
	"github.com/wavehouse/wavehouse/internal/ingest/request"
	"github.com/wavehouse/wavehouse/internal/limits"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
	"github.com/wavehouse/wavehouse/internal/ops"
	"github.com/wavehouse/wavehouse/internal/query"
	"github.com/wavehouse/wavehouse/internal/query/pipes"
	"github.com/wavehouse/wavehouse/internal/settings"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/schemacache"
	"github.com/wavehouse/wavehouse/internal/store/tenantstore"
	"github.com/wavehouse/wavehouse/internal/stream"
)

// App is one wired process, ready to Run.
type App struct {
	cfg       config.Config
	log       *slog.Logger
	reg       *prometheus.Registry
	readiness *ops.Readiness
	opsLn     *listener
	apiLn     *listener
	lc        lifecycle
	started   chan struct{}

	// Layer handles, set by the layer builders (one file per layer).
	store     store.Store
	schema    *schemacache.Cache
	database  string
	queue     mq.Queue
	natsQueue *natsmq.Queue
	cache     cache.Cache
	dedupe    dedupe.Store
	coord     coord.Coordinator
	commits   *commits.Log
	// breakers exports the state of every circuit breaker (writer, Redis, DynamoDB).
	breakers *breaker.Metrics
	pipes    *pipes.Live
	// parsedPipes hands the pipes parsed by the settings check to the reload that applies them.
	parsedPipes *pipeParser
	// anonymous and accessWarning are the secure-default decision New made (CheckAccess).
	anonymous     bool
	accessWarning string
	router        *tenantstore.Router
	settings      *settings.Manager
	authn         *auth.Authenticator
	limiter       *limits.Limiter
	// layers are the components whose constructors already hold resources (the chDB engine, a
	// Pebble directory); Run releases them even when boot failed before they started.
	layers []*funcComponent
	stream *stream.Service
}

// New builds every component the configured roles need. It starts nothing. cfg must have passed
// Validate.
func New(cfg config.Config, log *slog.Logger) (*App, error) {
	// The secure default is checked before any backend is touched, so a refused boot says why.
	snap, err := LoadSettings(cfg)
	if err != nil {
		return nil, fmt.Errorf("settings_dir %s: %w", cfg.SettingsDir, err)
	}
	anonymous, warning, err := CheckAccess(cfg, snap)
	if err != nil {
		return nil, err
	}
	a := &App{cfg: cfg, log: log, reg: ops.NewRegistry(), started: make(chan struct{}), commits: commits.New(1 << 16),
		anonymous: anonymous, accessWarning: warning}
	if a.breakers, err = breaker.NewMetrics(a.reg); err != nil {
		return nil, err
	}
	names := componentsFor(cfg.Roles)
	a.readiness = ops.NewReadiness(names...)
	var comps []Component
	for _, name := range names {
		c, err := a.build(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if c == nil {
			a.readiness.Up(name)
			continue
		}
		if fc, ok := c.(*funcComponent); ok {
			a.layers = append(a.layers, fc)
		}
		comps = append(comps, readyOnStart{Component: c, readiness: a.readiness})
	}
	a.lc = lifecycle{
		log:         log,
		components:  comps,
		onStarted:   func() { a.readiness.Started(); close(a.started) },
		onStopping:  a.readiness.Drain,
		stopTimeout: cfg.ShutdownTimeout.D(),
	}
	return a, nil
}

// build returns the component called name, or nil when this build has nothing to run for it.
func (a *App) build(name string) (Component, error) {
	switch name {
	case compOps:
		h := ops.Handler(ops.Options{Readiness: a.readiness, Gatherer: a.reg, Pprof: a.cfg.Ops.Pprof})
		a.opsLn = newListener(compOps, a.cfg.Ops.Listen, h, a.log, a.cfg.Server.ReadHeaderTimeout.D(), a.cfg.Server.IdleTimeout.D())
		return a.opsLn, nil
	case compStore:
		return a.buildStore()
	case compMQ:
		return a.buildMQ()
	case compCache:
		return a.buildCache()
	case compDedupe:
		return a.buildDedupe()
	case compCoord:
		return a.buildCoord()
	case compIngest:
		return a.buildIngest()
	case compSweeper:
		return a.buildSweeper()
	case compSettings:
		return a.buildSettings()
	case compAPI:
		h, err := a.apiHandler()
		if err != nil {
			return nil, err
		}
		a.apiLn = newListener(compAPI, a.cfg.Server.Listen, h, a.log, a.cfg.Server.ReadHeaderTimeout.D(), a.cfg.Server.IdleTimeout.D())
		// SSE connections never go idle: end them when shutdown begins, so Shutdown does not wait
		// for its deadline (clients resume elsewhere with Last-Event-ID).
		a.apiLn.srv.RegisterOnShutdown(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = a.stream.Close(ctx)
		})
		return a.apiLn, nil
	}
	a.log.Warn("component not available in this build yet; the process runs without it", "component", name)
	return nil, nil
}

// apiHandler is the public API. It never serves ops routes (probes, metrics, pprof).
func (a *App) apiHandler() (http.Handler, error) {
	in := a.cfg.Ingest
	if err := a.buildAccess(); err != nil {
		return nil, err
	}
	q, err := query.New(query.Config{}, query.Deps{Store: a.store, Cache: a.cache, Log: a.log, Limits: a.queryLimits})
	if err != nil {
		return nil, err
	}
	ph, err := pipes.NewHandler(pipes.Deps{Pipes: a.pipes, Query: q})
	if err != nil {
		return nil, err
	}
	sc := a.cfg.Stream
	st, err := stream.New(stream.Config{Heartbeat: sc.Heartbeat.D(), Retry: sc.Retry.D(), Buffer: sc.Buffer, SlowPolicy: sc.SlowPolicy,
		MaxSubscribers: sc.MaxSubscribers, WriteTimeout: sc.WriteTimeout.D()}, stream.Deps{Queue: a.queue, Registerer: a.reg, Log: a.log})
	if err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	a.stream = st
	deps := api.Deps{
		Query: q, Pipes: ph, Stream: st, Store: a.store, Schema: a.schema, Targets: tenantTargets{a}, Queue: a.queue, DLQ: a.queue.DLQ(),
		Invalidator: cacheInvalidator{a}, Auth: a.authn, Limits: a.limiter, Retention: a.retention,
		SettingsReload: a.settings.ReloadHandler(), Registerer: a.reg, Log: a.log,
	}
	if a.cfg.Roles.Has(config.RoleIngest) {
		deps.Commits = a.commits // settlements are only seen in the process that inserts
	}
	if a.cfg.Idempotency.Enabled {
		deps.Dedupe = a.dedupe
	}
	h, err := api.New(api.Config{
		Limits:      request.Limits{MaxBodyBytes: in.MaxBodyBytes, MaxRows: in.MaxRows, MaxErrors: in.MaxErrors},
		WaitTimeout: in.WaitTimeout.D(),
		Idempotency: api.Idempotency{Lease: a.cfg.Idempotency.Lease.D(), Retention: a.cfg.Idempotency.Retention.D()},
	}, deps)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	if err := h.Routes(mux); err != nil {
		return nil, err
	}
	return httpx.Middleware(a.log, httpx.Routes(mux)), nil
}

// Run runs the process until ctx ends (graceful shutdown, nil) or a component fails (its
// *FatalError).
func (a *App) Run(ctx context.Context) error {
	for _, w := range a.cfg.Warnings() {
		a.log.Warn("config warning", "warning", w)
	}
	a.log.Info("wavehouse starting", "instance_id", a.cfg.InstanceID, "roles", a.cfg.Roles.String(),
		"store", a.cfg.Store.Backend, "mq", a.cfg.MQ.Backend, "cache", a.cfg.Cache.Backend,
		"dedupe", a.cfg.Dedupe.Backend, "coord", a.cfg.Coord.Backend)
	err := a.lc.run(ctx)
	release, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.ShutdownTimeout.D())
	defer cancel()
	for i := len(a.layers) - 1; i >= 0; i-- {
		_ = a.layers[i].Stop(release) // a no-op for components the lifecycle already stopped
	}
	return err
}

// Started is closed once every component has started; the listener addresses are known then.
func (a *App) Started() <-chan struct{} { return a.started }

// OpsAddr is the bound ops listener address, once started.
func (a *App) OpsAddr() string { return a.opsLn.Addr() }

// APIAddr is the bound API listener address, once started; "" without the api role.
func (a *App) APIAddr() string {
	if a.apiLn == nil {
		return ""
	}
	return a.apiLn.Addr()
}

// readyOnStart marks its component ready once Start succeeded.
type readyOnStart struct {
	Component
	readiness *ops.Readiness
}

func (r readyOnStart) Start(ctx context.Context) error {
	if err := r.Component.Start(ctx); err != nil {
		return err
	}
	r.readiness.Up(r.Name())
	return nil
}
