// Package app wires a wavehouse process: it is the only package that knows the concrete
// backends. One file per layer holds that layer's switch; roles.go says which components each
// role needs and in which order they start and stop.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/ops"
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
}

// New builds every component the configured roles need. It starts nothing. cfg must have passed
// Validate.
func New(cfg config.Config, log *slog.Logger) (*App, error) {
	a := &App{cfg: cfg, log: log, reg: ops.NewRegistry(), started: make(chan struct{})}
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
	case compAPI:
		a.apiLn = newListener(compAPI, a.cfg.Server.Listen, a.apiHandler(), a.log, a.cfg.Server.ReadHeaderTimeout.D(), a.cfg.Server.IdleTimeout.D())
		return a.apiLn, nil
	}
	a.log.Warn("component not available in this build yet; the process runs without it", "component", name)
	return nil, nil
}

// apiHandler is the public API. It never serves ops routes (probes, metrics, pprof).
func (a *App) apiHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", httpx.NotFound)
	return httpx.Middleware(a.log, mux)
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
	return a.lc.run(ctx)
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
