// Package app wires a wavehouse process: it is the only package that knows the concrete
// backends. One file per layer holds that layer's switch; roles.go says which components each
// role needs and in which order they start and stop.
package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/api"
	"github.com/wavehouse/wavehouse/internal/breaker"
	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/ingest/writer"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/ops"
	"github.com/wavehouse/wavehouse/internal/tracing"
)

// App is one wired process, ready to Run. It keeps only what running and reporting need; the
// layers and workers were handed to one another by wire.
type App struct {
	cfg     config.Config
	log     *slog.Logger
	lc      lifecycle
	started chan struct{}
	opsLn   *listener
	apiLn   *listener
	// layers are the components whose constructors already hold resources (the chDB engine, a
	// Pebble directory); Run releases them even when boot failed before they started.
	layers []*funcComponent
	// queue is the process's queue (nil without one); tests reach the embedded server through it.
	queue mq.Queue
	// tracer is flushed once everything stopped.
	tracer tracing.Provider
}

// env is what every builder may use besides the handles it takes as parameters: the boot
// config, the logger, the metrics registry, readiness, and the breakers' and listeners' metrics.
type env struct {
	cfg       config.Config
	log       *slog.Logger
	reg       registry
	readiness *ops.Readiness
	breakers  *breaker.Metrics
	tracer    tracing.Provider
	http      *httpx.Metrics
}

// registry is where the process's metrics go: every builder registers with it, the ops listener
// gathers from it.
type registry interface {
	prometheus.Registerer
	prometheus.Gatherer
}

// Option changes how New wires the process for a test; a production process takes none.
type Option func(*options)

// options are what the Options set; wire hands each to the builder that uses it.
type options struct {
	writerFault func(writer.FaultPoint)
	apiFault    func(api.FaultPoint) bool
	// registry replaces the process's own metrics registry (the metrics reference records what
	// registers).
	registry registry
}

// WithWriterFault gives the ingest writer a fault-injection hook (writer.Deps.Fault): the crash
// tests' binary, built with the wavehouse_faults tag, passes one that kills the process.
func WithWriterFault(f func(writer.FaultPoint)) Option {
	return func(o *options) { o.writerFault = f }
}

// WithAPIFault gives the api a fault-injection hook on the keyed publish path (api.Deps.Fault),
// as WithWriterFault does for the writer.
func WithAPIFault(f func(api.FaultPoint) bool) Option {
	return func(o *options) { o.apiFault = f }
}

// withRegistry makes the process register its metrics with reg instead of a registry of its own.
func withRegistry(reg registry) Option {
	return func(o *options) { o.registry = reg }
}

// New builds every component the configured roles use. It starts nothing. cfg must have passed
// Validate.
func New(cfg config.Config, log *slog.Logger, opts ...Option) (*App, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.registry == nil {
		o.registry = ops.NewRegistry()
	}
	// The secure default is checked before any backend is touched, so a refused boot says why.
	snap, err := LoadSettings(cfg)
	if err != nil {
		return nil, fmt.Errorf("settings_dir %s: %w", cfg.SettingsDir, err)
	}
	anonymous, warning, err := CheckAccess(cfg, snap)
	if err != nil {
		return nil, err
	}
	names := componentsFor(cfg.Roles)
	e := env{cfg: cfg, log: log, reg: o.registry, readiness: ops.NewReadiness(names...)}
	if e.breakers, err = breaker.NewMetrics(e.reg); err != nil {
		return nil, err
	}
	if e.http, err = httpx.NewMetrics(e.reg); err != nil {
		return nil, err
	}
	if e.tracer, err = buildTracing(cfg); err != nil {
		return nil, err
	}
	w, err := wire(e, access{anonymous: anonymous, warning: warning}, o)
	if err != nil {
		_ = e.tracer.Shutdown(context.Background())
		return nil, err
	}
	a := &App{cfg: cfg, log: log, started: make(chan struct{}), opsLn: w.opsLn, apiLn: w.apiLn, queue: w.queue, tracer: e.tracer}
	var comps []Component
	for _, name := range names {
		c := w.comps[name]
		if fc, ok := c.(*funcComponent); ok {
			a.layers = append(a.layers, fc)
		}
		comps = append(comps, readyOnStart{Component: c, readiness: e.readiness})
	}
	a.lc = lifecycle{
		log:         log,
		components:  comps,
		onStarted:   func() { e.readiness.Started(); close(a.started) },
		onStopping:  e.readiness.Drain,
		stopTimeout: cfg.ShutdownTimeout.D(),
	}
	return a, nil
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
	// Spans of the last requests and inserts are still buffered: export them before exiting.
	if terr := a.tracer.Shutdown(release); terr != nil {
		a.log.Warn("tracing: spans not exported at shutdown", "error", terr)
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
