// Package query_test holds the HTTP-level acceptance tests of the query path: /v1/query and
// /v1/pipes over an httptest server wrapping query.Service, on both store backends (the
// embedded chDB engine and a ClickHouse 18.16 server) and both cache backends.
package query_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/localcache"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/logging"
	"github.com/wavehouse/wavehouse/internal/query"
	"github.com/wavehouse/wavehouse/internal/query/pipes"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/testutil/chdbtest"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// engine is the process's one chDB engine, shared by every test of this package and closed by
// TestMain.
var engine chdbtest.Engine

func TestMain(m *testing.M) {
	code := m.Run()
	engine.Close()
	os.Exit(code)
}

func chdbStore(t testing.TB) store.Store { return engine.Store(t) }

func clickhouseStore(t testing.TB, addr string) store.Store {
	t.Helper()
	s, err := clickhousestore.New(clickhousestore.Config{Endpoint: clickhousestore.Endpoint{Addr: []string{addr}}}, clickhousestore.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// backend opens a store on one engine; every test of a backend shares the returned store.
type backend struct {
	name string
	open func(t *testing.T) store.Store
}

func backends() []backend {
	return []backend{
		{"chdb", func(t *testing.T) store.Store { return chdbStore(t) }},
		{"clickhouse", func(t *testing.T) store.Store { return clickhouseStore(t, testsvc.ClickHouseServer(t).NativeAddr) }},
	}
}

// counting counts the queries that reach the real store.
type counting struct {
	store.Querier
	n atomic.Int64
}

func (c *counting) Query(ctx context.Context, t store.Target, q store.Query) (store.Rows, error) {
	c.n.Add(1)
	return c.Querier.Query(ctx, t, q)
}

// env is one tenant database with an events table, a query service over a counted store and
// a cache, pipes loaded from a directory, and an HTTP server routing /v1/query and /v1/pipes.
type env struct {
	store  store.Store
	calls  *counting
	target store.Target
	cache  cacheBackend
	svc    *query.Service
	pipes  *pipes.Registry
	srv    *httptest.Server
}

// cacheBackend is what the service and the tests need of a cache.
type cacheBackend interface {
	cache.Results
	cache.Versioner
}

// eventsDDL creates the table on both 18.16 and modern engines.
const eventsDDL = "CREATE TABLE %s.events (id UInt64, user String, big Int64) ENGINE = MergeTree ORDER BY id"

// Pipe definitions every env serves.
var pipeFiles = map[string]string{
	"by_user.sql": `-- Events of one user.
-- @param user String required The user name.
-- @param min_id UInt64 default 0 Smallest id.
SELECT id, user, big FROM events WHERE user = {user:String} AND id >= {min_id:UInt64} ORDER BY id
`,
	"typed.sql": `-- Echo of typed values.
-- @param u UInt64 required
-- @param i Int64 required
-- @param d Date required
-- @param tags Array(String) default []
-- @ttl 1m
SELECT {u:UInt64} AS u, {i:Int64} AS i, {d:Date} AS d, {tags:Array(String)} AS tags
`,
	"count.sql": `-- @tables events
SELECT count() AS c FROM events WHERE id > 0
`,
}

// newEnv builds an env on s with a fresh database; c nil means a fresh local cache. opts
// adjust the query service's dependencies.
func newEnv(t testing.TB, s store.Store, c cacheBackend, opts ...func(*query.Deps)) *env {
	t.Helper()
	db := testsvc.UniqueName(t, "qt")
	ctx := t.Context()
	if err := s.Exec(ctx, store.Target{Database: "default"}, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Exec(context.Background(), store.Target{Database: "default"}, "DROP DATABASE IF EXISTS "+db)
	})
	if err := s.Exec(ctx, store.Target{Database: db}, strings.ReplaceAll(eventsDDL, "%s", db)); err != nil {
		t.Fatal(err)
	}
	if c == nil {
		lc, err := localcache.New(localcache.Config{}, localcache.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = lc.Close(context.Background()) })
		c = lc
	}
	e := &env{store: s, calls: &counting{Querier: s}, target: store.Target{Tenant: db, Database: db}, cache: c}
	deps := query.Deps{Store: e.calls, Cache: c}
	for _, o := range opts {
		o(&deps)
	}
	svc, err := query.New(query.Config{}, deps)
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	dir := t.TempDir()
	for name, src := range pipeFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if e.pipes, err = pipes.NewRegistry(dir); err != nil {
		t.Fatal(err)
	}
	h, err := pipes.NewHandler(pipes.Deps{Pipes: e.pipes, Query: svc})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/query", func(w http.ResponseWriter, r *http.Request) { svc.ServeHTTP(w, r, e.target.Tenant, e.target) })
	mux.HandleFunc("GET /v1/pipes", func(w http.ResponseWriter, r *http.Request) { h.List(w, r, e.target.Tenant) })
	pipe := func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r, e.target.Tenant, e.target) }
	mux.HandleFunc("GET /v1/pipes/{name}", pipe)
	mux.HandleFunc("POST /v1/pipes/{name}", pipe)
	// The gateway's middleware (request id, access log at the app's level, panic recovery)
	// wraps the routes as in internal/app, so tests and benchmarks cross the same layers.
	log, err := logging.New(io.Discard, logging.Options{Level: "info", Format: "json"})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(httpx.Middleware(log, mux))
	t.Cleanup(e.srv.Close)
	e.insert(t, `[1,"ann",-9223372036854775808]`, `[18446744073709551615,"o'brien",9223372036854775807]`, `[3,"ann",42]`)
	return e
}

// insert writes canonical rows through the store.
func (e *env) insert(t testing.TB, rows ...string) {
	t.Helper()
	b := store.Batch{Target: e.target, Table: "events", Columns: []string{"id", "user", "big"}}
	for _, r := range rows {
		b.Rows = append(b.Rows, []byte(r))
	}
	if err := e.store.Insert(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

// response is one HTTP answer.
type response struct {
	code   int
	header http.Header
	body   []byte
}

// json decodes the body keeping numbers exact.
func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(r.body)))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("status %d body %q: %v", r.code, r.body, err)
	}
	return out
}

// data returns the rows of a JSON result.
func (r response) data(t testing.TB) []map[string]any {
	t.Helper()
	raw, _ := r.json(t)["data"].([]any)
	out := make([]map[string]any, len(raw))
	for i, row := range raw {
		out[i] = row.(map[string]any)
	}
	return out
}

func (r response) cache() string { return r.header.Get("X-Cache") }

func (e *env) do(t testing.TB, method, path, body string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{code: res.StatusCode, header: res.Header, body: b}
}

// query posts a /v1/query body built from v.
func (e *env) query(t testing.TB, v map[string]any) response {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return e.do(t, http.MethodPost, "/v1/query", string(b))
}

// count returns the rows of events through an uncached query.
func (e *env) count(t testing.TB) string {
	t.Helper()
	r := e.do(t, http.MethodPost, "/v1/query?cache=false", `{"sql":"SELECT count() AS c FROM events"}`)
	if r.code != 200 {
		t.Fatalf("count: %d %s", r.code, r.body)
	}
	return string(r.data(t)[0]["c"].(json.Number))
}
