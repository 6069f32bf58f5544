package app

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/wavehouse/wavehouse/internal/api"
	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/console"
	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/ingest/commits"
	"github.com/wavehouse/wavehouse/internal/ingest/request"
	"github.com/wavehouse/wavehouse/internal/limits"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/query"
	"github.com/wavehouse/wavehouse/internal/query/pipes"
	"github.com/wavehouse/wavehouse/internal/store/schemacache"
	"github.com/wavehouse/wavehouse/internal/stream"
)

// apiDeps is what the API listener serves over.
type apiDeps struct {
	store    storeLayer
	schema   *schemacache.Cache
	queue    mq.Queue
	cache    cache.Cache
	dedupe   dedupe.Store
	settings *settingsLayer
	pipes    *pipes.Live
	targets  tenantTargets
	inv      cacheInvalidator
	authn    *auth.Authenticator
	limiter  *limits.Limiter
	// commits is set in a process that also inserts: only there are settlements seen.
	commits *commits.Log
	// fault is the keyed publish path's fault-injection hook (WithAPIFault); nil in production.
	fault func(api.FaultPoint) bool
	// warning is the secure-default warning, logged at every boot when the API is public and
	// anonymous.
	warning string
}

// buildAPI creates the public API listener. It never serves ops routes (probes, metrics, pprof);
// it serves the operator console under /console (docs/adr/0010-operator-console-on-the-api-listener.md).
func buildAPI(e env, d apiDeps) (*listener, error) {
	if d.warning != "" {
		e.log.Warn("SECURITY: "+d.warning, "listen", e.cfg.Server.Listen)
	}
	if e.cfg.OpsSQL.AllowHostTableFunctions {
		e.log.Warn("SECURITY: ops_sql.allow_host_table_functions is true: operator SQL may read the server's files, reach the network and run programs (file, url, s3, remote, executable, …)")
	}
	in := e.cfg.Ingest
	q, err := query.New(query.Config{}, query.Deps{Store: d.store.store, Cache: d.cache, Log: e.log, Limits: queryLimits(d.limiter),
		Tracer: e.tracer.Scoped()})
	if err != nil {
		return nil, err
	}
	ph, err := pipes.NewHandler(pipes.Deps{Pipes: d.pipes, Query: q})
	if err != nil {
		return nil, err
	}
	sc := e.cfg.Stream
	st, err := stream.New(stream.Config{Heartbeat: sc.Heartbeat.D(), Retry: sc.Retry.D(), Buffer: sc.Buffer, SlowPolicy: sc.SlowPolicy,
		MaxSubscribers: sc.MaxSubscribers, WriteTimeout: sc.WriteTimeout.D()}, stream.Deps{Queue: d.queue, Registerer: e.reg, Log: e.log})
	if err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	deps := api.Deps{
		Query: q, Pipes: ph, Stream: st, Store: d.store.store, Schema: d.schema, Targets: d.targets, Queue: d.queue, DLQ: d.queue.DLQ(),
		Invalidator: d.inv, Auth: d.authn, Limits: d.limiter, Retention: d.settings.retention,
		SettingsReload: d.settings.mgr.ReloadHandler(), Registerer: e.reg, Log: e.log,
		Tracer: e.tracer.Scoped(), Fault: d.fault,
	}
	if d.commits != nil {
		deps.Commits = d.commits
	}
	if e.cfg.Idempotency.Enabled {
		deps.Dedupe = d.dedupe
	}
	h, err := api.New(api.Config{
		Limits:                  request.Limits{MaxBodyBytes: in.MaxBodyBytes, MaxRows: in.MaxRows, MaxErrors: in.MaxErrors},
		WaitTimeout:             in.WaitTimeout.D(),
		Idempotency:             api.Idempotency{Lease: e.cfg.Idempotency.Lease.D(), Retention: e.cfg.Idempotency.Retention.D()},
		AllowHostTableFunctions: e.cfg.OpsSQL.AllowHostTableFunctions,
	}, deps)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	if err := h.Routes(mux); err != nil {
		return nil, err
	}
	con, err := console.New(console.Config{}, console.Deps{Auth: d.authn, Metrics: e.reg, Store: d.store.store, Targets: d.targets,
		DLQ: d.queue.DLQ(), Log: e.log.With("component", "console")})
	if err != nil {
		return nil, err
	}
	con.Routes(mux)
	h.ConsoleRoutes(mux, con.Guard)
	ln := newListener(compAPI, e.cfg.Server.Listen, traced(httpx.Middleware(e.log, e.http.Instrument(compAPI, httpx.CORS(corsPolicy(d.settings.mgr), httpx.Routes(mux)))), e.tracer), e.log,
		e.cfg.Server.ReadHeaderTimeout.D(), e.cfg.Server.IdleTimeout.D())
	// SSE connections never go idle: end them when shutdown begins, so Shutdown does not wait for
	// its deadline (clients resume elsewhere with Last-Event-ID).
	ln.srv.RegisterOnShutdown(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = st.Close(ctx)
	})
	return ln, nil
}
