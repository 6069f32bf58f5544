// Package query serves read queries: SQL checked read-only, typed parameters bound by the store,
// results streamed as JSON, NDJSON or CSV, and cached under a key that folds in the versions of
// the tables the query reads — read before the query runs, so an insert that lands mid-query
// orphans the fill instead of leaving stale rows cached.
package query

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"golang.org/x/sync/singleflight"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/query/sqlscan"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/tracing"
)

// Config configures the service. Zero fields take the defaults of DefaultConfig.
type Config struct {
	// MaxCachedBytes is the largest encoded result that is cached; larger ones are streamed.
	MaxCachedBytes int
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{MaxCachedBytes: 1 << 20}
}

// Limits bound one tenant's queries. A zero field means no limit; a zero CacheTTL means the
// cache backend's default TTL.
type Limits struct {
	// MaxRows is the most rows a query may return (max_result_rows).
	MaxRows uint64
	// MaxBytes is the most uncompressed bytes a query may return (max_result_bytes).
	MaxBytes uint64
	// MaxExecutionTime is max_execution_time.
	MaxExecutionTime time.Duration
	// CacheTTL is the lifetime of cached results (a pipe's Request.TTL wins).
	CacheTTL time.Duration
}

// Deps are the service's collaborators. Cache may be nil (every query bypasses).
type Deps struct {
	Store store.Querier
	Cache interface {
		cache.Results
		cache.Versioner
	}
	Log *slog.Logger
	// Limits returns the limits of a tenant's queries in force, read at the start of every
	// query so that a settings reload applies to the next one; nil means no limits. The
	// concurrency limit is not here: the caller holds the tenant's slot (limits.Limiter).
	Limits func(tenant string) Limits
	// Tracer starts a span per query sent to the store and per cache fill; nil means no spans.
	Tracer trace.Tracer
}

// Request is one query.
type Request struct {
	SQL string
	// Params are the bound parameters by name. They are read, never modified, so requests
	// may share one map.
	Params map[string][]byte
	Format Format
	// MaxRows lowers the tenant's row limit for this query (0: the tenant's).
	MaxRows uint64
	// NoCache bypasses the cache.
	NoCache bool
	// TTL is the lifetime of this result in the cache (0: the tenant's Limits.CacheTTL). Pipes
	// set it.
	TTL time.Duration
	// Tables, when not empty, are the tables of the tenant's database the result depends
	// on, used instead of the tables the scanner finds in SQL. Pipes declare them.
	Tables []string
	// AllowTable, when not nil, restricts the principal to the tables it accepts: every
	// table the query reads (Tables, or those the scanner finds in SQL) must pass before
	// anything runs or is served from the cache. A query whose tables the scanner cannot
	// determine, or that reads another database's table, is refused. See ErrTableNotAllowed.
	AllowTable func(table string) bool
	// Policy, when not nil, rewrites the SQL before anything runs or is served from the cache
	// (policy.Rewrite for an end user's role): the result, with the parameters it adds, is
	// the query that runs and the one the cache key is made of. A request may not bind a
	// parameter of its own named like one the rewrite adds.
	Policy func(sql string) (string, []store.Param, error)
	// MaxExecutionTime lowers the tenant's time limit for this query (0: the tenant's).
	MaxExecutionTime time.Duration
	// describe, when not nil, shapes the answer of a DESCRIBE on the ClickHouse interface.
	describe *describe
}

// Service runs queries through the cache.
type Service struct {
	cfg        Config
	deps       Deps
	view       func(context.Context, cache.Key) ([]byte, error) // Cache's View when it lends values, else Get
	flights    singleflight.Group
	executions atomic.Uint64
	bufs       sync.Pool       // of *[]byte, for request bodies
	sqls       memo[*sqlInfo]  // by SQL text
	bodies     memo[*prepared] // by /v1/query body
	hdr        headers
}

// New returns a service.
func New(cfg Config, deps Deps) (*Service, error) {
	if cfg.MaxCachedBytes == 0 {
		cfg.MaxCachedBytes = DefaultConfig().MaxCachedBytes
	}
	if deps.Store == nil {
		return nil, errors.New("query: Store is required")
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Limits == nil {
		deps.Limits = func(string) Limits { return Limits{} }
	}
	s := &Service{cfg: cfg, deps: deps, hdr: newHeaders()}
	if deps.Cache != nil {
		s.view = deps.Cache.Get
		if v, ok := deps.Cache.(cache.Viewer); ok {
			s.view = v.View
		}
	}
	return s, nil
}

// Executions counts queries sent to the store (cache hits and shared flights excluded).
func (s *Service) Executions() uint64 { return s.executions.Load() }

// Errors the HTTP layer maps to responses.
var (
	ErrRejected = errors.New("query: rejected")
	// ErrTableNotAllowed refuses a query of a principal restricted to tables (Request.AllowTable)
	// that reads another table, or whose tables cannot be determined.
	ErrTableNotAllowed = errors.New("query: table not allowed")
	errTooLarge        = errors.New("query: result too large to cache")
)

// Check validates req before anything runs.
func Check(req Request) error {
	if strings.TrimSpace(req.SQL) == "" {
		return fmt.Errorf("%w: sql is empty", ErrRejected)
	}
	if err := sqlscan.Check(req.SQL); err != nil {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	return checkFormat(req.Format)
}

// check is Check with the statement verdict taken from info.
func check(req Request, info *sqlInfo) error {
	if strings.TrimSpace(req.SQL) == "" {
		return fmt.Errorf("%w: sql is empty", ErrRejected)
	}
	if info.err != nil {
		return fmt.Errorf("%w: %w", ErrRejected, info.err)
	}
	return checkFormat(req.Format)
}

func checkFormat(f Format) error {
	switch f {
	case FormatJSON, FormatNDJSON, FormatCSV:
		return nil
	}
	if _, ok := parseChFormat(f); ok {
		return nil
	}
	return fmt.Errorf(`%w: format must be "json", "ndjson" or "csv"`, ErrRejected)
}

// storeQuery is req with the limits it runs under.
func storeQuery(req Request, b bounds) store.Query {
	q := store.Query{SQL: req.SQL, Limits: b.store}
	for name, v := range req.Params {
		q.Params = append(q.Params, store.Param{Name: name, Value: v})
	}
	return q
}

// cacheKey reads the versions the result depends on and builds its key from the query's
// digest (computed here when digest is nil); ok is false when the cache cannot be used for
// this query.
func (s *Service) cacheKey(ctx context.Context, tenant, database string, req Request, b bounds, info *sqlInfo, digest *cache.QueryDigest) (cache.Key, bool) {
	if s.deps.Cache == nil || req.NoCache {
		return cache.Key{}, false
	}
	var deps cache.Deps
	if len(req.Tables) > 0 {
		deps.Tables = req.Tables
	} else if !scanTables(info, database, &deps) {
		return cache.Key{}, false
	}
	v, err := s.deps.Cache.Versions(ctx, tenant, deps)
	if err != nil {
		return cache.Key{}, false
	}
	if digest == nil {
		d := digestRequest(req, info)
		digest = &d
	}
	return b.fold(*digest).Key(tenant, v), true
}

// digestRequest digests what identifies a request's result besides the tenant and versions:
// the normalised SQL, the parameters, the format and the row limit.
func digestRequest(req Request, info *sqlInfo) cache.QueryDigest {
	params := make(map[string]string, len(req.Params)+2)
	params["\x00format"] = string(req.Format)
	params["\x00max_rows"] = strconv.FormatUint(req.MaxRows, 10)
	for name, val := range req.Params {
		params[name] = string(val)
	}
	return cache.DigestQuery(info.normalized, params)
}

// buffered runs the query into memory, giving up with errTooLarge past MaxCachedBytes.
func (s *Service) buffered(ctx context.Context, target store.Target, req Request, b bounds, st *store.Stats) ([]byte, error) {
	var buf bytes.Buffer
	w := &capWriter{buf: &buf, limit: s.cfg.MaxCachedBytes}
	if err := s.execute(ctx, target, req, b, w, nil, st); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// execute runs the query and encodes it to w. started, when not nil, is called right before the
// first byte is written (the HTTP layer sends headers there). Errors before that point are
// returned; errors after it are reported inside the document and also returned. st, when not
// nil, receives the query's counters.
func (s *Service) execute(ctx context.Context, target store.Target, req Request, b bounds, w interface{ Write([]byte) (int, error) }, started func(), st *store.Stats) error {
	s.executions.Add(1)
	ctx, span := tracing.Start(ctx, s.deps.Tracer, "query", trace.SpanKindClient)
	defer span.End()
	rows, err := s.deps.Store.Query(ctx, target, storeQuery(req, b))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return b.named(err)
	}
	defer rows.Close()
	if req.describe != nil {
		if rows, err = req.describe.rows(rows); err != nil {
			return err
		}
	}
	first := rows.Next()
	if !first {
		if err := rows.Err(); err != nil {
			return b.named(err)
		}
	}
	if started != nil {
		started()
	}
	enc := newEncoder(req.Format, w, rows.Columns())
	if err := enc.begin(); err != nil {
		return err
	}
	var n uint64
	for ok := first; ok; ok = rows.Next() {
		if n++; n > b.store.MaxResultRows && b.store.MaxResultRows > 0 {
			// The engine does not apply result limits to every query (chDB 26.5 skips those
			// without FROM, e.g. SELECT arrayJoin(range(1e9))): the row limit holds here too.
			err := b.overRows()
			_ = enc.end(rows.Stats(), err)
			return err
		}
		if err := enc.row(rows.Row()); err != nil {
			if errors.Is(err, errTooLarge) {
				return err
			}
			_ = enc.end(rows.Stats(), err)
			return err
		}
	}
	failure := b.named(rows.Err())
	if st != nil {
		*st = rows.Stats()
	}
	if err := enc.end(rows.Stats(), failure); err != nil && failure == nil {
		return err
	}
	return failure
}

// capWriter buffers up to limit bytes.
type capWriter struct {
	buf   *bytes.Buffer
	limit int
}

func (c *capWriter) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.limit {
		return 0, errTooLarge
	}
	return c.buf.Write(p)
}

// scanTables fills deps from the tables the SQL reads; false means the result must not be
// cached (it reads server state that changes without inserts).
func scanTables(info *sqlInfo, database string, deps *cache.Deps) bool {
	deps.AllTables = !info.sure
	if !info.qualified {
		deps.Tables = info.local // shared: Versions only reads it
		return true
	}
	for _, t := range info.tables {
		if sys := strings.ToLower(t.Database); sys == "system" || sys == "information_schema" {
			return false // server state changes without inserts
		}
		switch t.Database {
		case "", database:
			deps.Tables = append(deps.Tables, t.Name)
		default:
			deps.AllTables = true // another database: depend on everything of the tenant
		}
	}
	return true
}
