// Package api is the public HTTP surface of the api role: ingest, query, pipes, streams, tables,
// operator SQL and the dead-letter queue. It speaks to the layers only through their contracts.
// Every error it answers has a stable code listed in docs/api.md.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/ingest/commits"
	"github.com/wavehouse/wavehouse/internal/ingest/request"
	"github.com/wavehouse/wavehouse/internal/limits"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/query"
	"github.com/wavehouse/wavehouse/internal/query/pipes"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/stream"
)

// Schema reads table columns through a cache that can be refreshed.
type Schema interface {
	Columns(ctx context.Context, target store.Target, table string) ([]store.Column, error)
	Refresh(ctx context.Context, target store.Target, table string) ([]store.Column, error)
	InvalidateDatabase(target store.Target)
}

// Targets resolves a tenant to its store target.
type Targets interface {
	Target(tenant string) (store.Target, error)
}

// CommitWaiter waits until a published record is settled by the ingest role.
type CommitWaiter interface {
	Wait(ctx context.Context, tenant, table string, pos mq.Position) (commits.Outcome, error)
}

// Invalidator bumps cache versions after operator SQL changed a tenant's data or schema.
type Invalidator interface {
	BumpTenant(ctx context.Context, tenant string)
}

// Config tunes the API.
type Config struct {
	// Limits bound one ingest request.
	Limits request.Limits
	// WaitTimeout bounds ?wait=committed.
	WaitTimeout time.Duration
	// RetryAfter is the Retry-After sent with 429 and 503 answers.
	RetryAfter time.Duration
	// Idempotency tunes Idempotency-Key handling (used when Deps.Dedupe is set).
	Idempotency Idempotency
	// AllowHostTableFunctions lets operator SQL touch the server's files and the network
	// (sqlscan.HostAccess); off, such statements answer 403 sql.host_access.
	AllowHostTableFunctions bool
}

// Deps are the API's collaborators. Commits and Invalidator may be nil.
type Deps struct {
	Store interface {
		store.Execer
		store.Querier
	}
	Schema  Schema
	Targets Targets
	Queue   mq.Publisher
	DLQ     mq.DeadLetters
	Query   *query.Service
	Pipes   *pipes.Handler
	Stream  interface {
		ServeHTTP(w http.ResponseWriter, r *http.Request, tenant string)
		ServeHTTPPolicy(w http.ResponseWriter, r *http.Request, tenant string, rows stream.RowPolicy)
	}
	Commits     CommitWaiter
	Dedupe      dedupe.Store
	Invalidator Invalidator
	// Auth authenticates every route and says which tenant a request acts as; required.
	Auth *auth.Authenticator
	// Limits applies the tenants' rate and concurrency limits; required.
	Limits *limits.Limiter
	// Retention returns a tenant's Idempotency-Key retention (0: Config.Idempotency.Retention).
	Retention func(tenant string) time.Duration
	// SettingsReload serves POST /v1/ops/settings/reload; nil leaves the route out.
	SettingsReload http.Handler
	Registerer     prometheus.Registerer
	Log            *slog.Logger
	// Tracer starts the publish spans; nil: none (tracing off).
	Tracer trace.Tracer
	// Fault is the keyed publish path's fault-injection hook (the wavehouse_faults build's
	// crash tests); nil in production. Its answer matters only at FaultCommitLost.
	Fault func(FaultPoint) bool
}

// API serves the public routes.
type API struct {
	cfg     Config
	deps    Deps
	metrics *metrics
	marker  claimMarker
}

// New returns the API; it starts nothing.
func New(cfg Config, deps Deps) (*API, error) {
	if deps.Store == nil || deps.Schema == nil || deps.Targets == nil || deps.Queue == nil || deps.Query == nil || deps.Auth == nil || deps.Limits == nil {
		return nil, errors.New("api: Store, Schema, Targets, Queue, Query, Auth and Limits are required")
	}
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = 10 * time.Second
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = time.Second
	}
	if cfg.Idempotency.Lease <= 0 {
		cfg.Idempotency.Lease = 30 * time.Second
	}
	if cfg.Idempotency.Retention <= 0 {
		cfg.Idempotency.Retention = 24 * time.Hour
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(deps.Registerer)
	if err != nil {
		return nil, err
	}
	a := &API{cfg: cfg, deps: deps, metrics: m}
	a.marker = claimMarker{a: a}
	return a, nil
}

// Routes registers the API's routes on mux, each behind the authentication and authorization
// rule auth.Routes gives its pattern and the tenant's request-rate limit. A pattern without a rule
// is an error, so that no route is ever served unguarded.
func (a *API) Routes(mux *http.ServeMux) error {
	routes := map[string]http.HandlerFunc{
		"POST /v1/ingest/{table}":         a.ingest,
		"POST /v1/query":                  a.read(a.deps.Query.ServeHTTPAccess, queryConfined),
		"GET /v1/tables":                  a.listTables,
		"GET /v1/tables/{table}":          a.getTable,
		"POST /v1/ops/sql":                a.opsSQL,
		"GET /v1/ops/dlq":                 a.dlqCounts,
		"GET /v1/ops/dlq/{table}":         a.dlqList,
		"POST /v1/ops/dlq/{table}/replay": a.dlqReplay,
		"DELETE /v1/ops/dlq/{table}":      a.dlqPurge,
	}
	clickhouse := map[string]http.HandlerFunc{"GET /{$}": a.clickhouse, "POST /{$}": a.clickhouse, "GET /ping": a.clickhousePing}
	if a.deps.Pipes != nil {
		routes["GET /v1/pipes"] = func(w http.ResponseWriter, r *http.Request) { a.deps.Pipes.List(w, r, a.tenant(r)) }
		pipe := a.read(a.deps.Pipes.ServeHTTPAccess, pipeConfined)
		routes["GET /v1/pipes/{name}"] = pipe
		routes["POST /v1/pipes/{name}"] = pipe
	}
	if a.deps.Stream != nil {
		routes["GET /v1/stream/{table}"] = a.stream
	}
	if a.deps.SettingsReload != nil {
		routes["POST /v1/ops/settings/reload"] = a.deps.SettingsReload.ServeHTTP
	}
	for pattern, h := range routes {
		if err := a.deps.Auth.Handle(mux, pattern, a.deps.Limits.Requests(h)); err != nil {
			return err
		}
	}
	for pattern, h := range clickhouse {
		if err := a.deps.Auth.Handle(mux, pattern, a.deps.Limits.RequestsAnswering(h, writeCH)); err != nil {
			return err
		}
	}
	return nil
}

// tenant returns the request's tenant, which auth derived from its credential; it is never taken
// from a header the client chooses.
func (a *API) tenant(r *http.Request) string { return auth.TenantFromContext(r.Context()) }

// target resolves the request's tenant, writing the error response when it cannot.
func (a *API) target(w http.ResponseWriter, tenant string) (store.Target, bool) {
	t, herr := a.targetOf(tenant)
	if herr != nil {
		httpx.WriteError(w, *herr)
		return store.Target{}, false
	}
	return t, true
}

// targetOf resolves a tenant to its store target: 403 tenant.unknown when it has none.
func (a *API) targetOf(tenant string) (store.Target, *httpx.Error) {
	t, err := a.deps.Targets.Target(tenant)
	if err != nil {
		return store.Target{}, &httpx.Error{Status: http.StatusForbidden, Code: "tenant.unknown", Message: err.Error()}
	}
	return t, nil
}

// storeError writes the response to a store failure.
func (a *API) storeError(w http.ResponseWriter, err error, table string) {
	httpx.WriteError(w, *a.storeErr(err, table))
}

// storeErr maps a store failure to its answer.
func (a *API) storeErr(err error, table string) *httpx.Error {
	switch {
	case errors.Is(err, store.ErrUnknownTable):
		return &httpx.Error{Status: http.StatusNotFound, Code: "table.unknown", Message: "table " + table + " does not exist"}
	case errors.Is(err, store.ErrUnknownDatabase):
		return &httpx.Error{Status: http.StatusNotFound, Code: "database.unknown", Message: err.Error()}
	case store.IsTransient(err) || errors.Is(err, context.DeadlineExceeded):
		return &httpx.Error{Status: http.StatusServiceUnavailable, Code: "store.unavailable", Message: err.Error(), Retryable: true, RetryAfter: a.cfg.RetryAfter}
	default:
		return &httpx.Error{Status: http.StatusBadRequest, Code: "store.rejected", Message: err.Error()}
	}
}

// readServer serves a read route (a query or a pipe) for tenant, whose tables live in target,
// restricted as the caller's credential says.
type readServer func(w http.ResponseWriter, r *http.Request, tenant string, target store.Target, acc query.Access)

// read serves a read route under one of the tenant's concurrent-query slots. confined says
// whether the caller's key is checked against the tables the SQL reads.
func (a *API) read(serve readServer, confined func(auth.Principal) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tenant, target, release, herr := a.admitRead(w, r)
		if herr != nil {
			httpx.WriteError(w, *herr)
			return
		}
		defer release()
		p, _ := auth.FromContext(r.Context())
		serve(w, r, tenant, target, a.access(r.Context(), p, target, confined(p)))
	}
}

// admitRead resolves a read's tenant and target and takes one of the tenant's concurrent-query
// slots (setting the RateLimit headers when none is free); the caller answers the error in its
// route's form and calls release when done.
func (a *API) admitRead(w http.ResponseWriter, r *http.Request) (string, store.Target, func(), *httpx.Error) {
	tenant := a.tenant(r)
	target, herr := a.targetOf(tenant)
	if herr != nil {
		return "", store.Target{}, nil, herr
	}
	release, d := a.deps.Limits.AcquireQuery(r.Context(), tenant)
	if !d.Allowed {
		limits.WriteHeaders(w, d)
		e := limits.RejectError(d)
		return "", store.Target{}, nil, &e
	}
	return tenant, target, release, nil
}

// queryConfined: a tenant key reads only its own database's tables, named plainly (and only the
// tables it is restricted to); the anonymous single-tenant principal is not confined.
func queryConfined(p auth.Principal) bool { return !p.Anonymous }

// pipeConfined: pipes are the operator's SQL, so only a key restricted to tables is checked
// against them.
func pipeConfined(p auth.Principal) bool { return len(p.Tables) > 0 }

// retention is how long tenant's Idempotency-Keys are remembered.
func (a *API) retention(tenant string) time.Duration {
	if a.deps.Retention != nil {
		if d := a.deps.Retention(tenant); d > 0 {
			return d
		}
	}
	return a.cfg.Idempotency.Retention
}
