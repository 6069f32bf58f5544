package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/cache/localcache"
	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/dedupe/localdedupe"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/ingest/commits"
	"github.com/wavehouse/wavehouse/internal/limits"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/query"
	"github.com/wavehouse/wavehouse/internal/query/pipes"
	"github.com/wavehouse/wavehouse/internal/settings"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/chdbstore"
	"github.com/wavehouse/wavehouse/internal/store/schemacache"
	"github.com/wavehouse/wavehouse/internal/stream"
	"github.com/wavehouse/wavehouse/internal/testutil/chdbtest"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// The API is tested over the real embedded backends, built here directly from their packages
// (internal/app, which wires them for the binary, imports this package): the chDB engine, the
// embedded NATS JetStream queue, the local cache, the Pebble dedupe store, and the real settings
// directory, authenticator and limiter.

// engine is the process's one chDB engine, shared by every test; each fixture owns its own
// databases in it.
var engine chdbtest.Engine

func TestMain(m *testing.M) {
	code := m.Run()
	engine.Close()
	os.Exit(code)
}

// eventsDDL is the table every fixture starts with: a required column, one with a DEFAULT and a
// Nullable one.
const eventsDDL = "CREATE TABLE %s.events (ts DateTime, user String, n UInt8 DEFAULT 0, note Nullable(String)) ENGINE = MergeTree ORDER BY ts"

// options vary a fixture.
type options struct {
	// limits is the YAML flow map of the tenant's limits (requests_per_second, rows_burst, …).
	limits string
	// anonymous serves without API keys (the loopback laptop setup); anonymousDB is the database
	// of the anonymous tenant ("" leaves it without one: every request is tenant.unknown).
	anonymous   bool
	anonymousDB bool
	// noDedupe runs without a dedupe store (idempotency disabled).
	noDedupe bool
	// dedupe, when set, wraps the fixture's dedupe store in what the API is given.
	dedupe func(dedupe.Store) dedupe.Store
	// noDLQ and noCommits leave those dependencies nil.
	noDLQ, noCommits bool
	// cfg and queue adjust the API's and the queue's configuration.
	cfg   func(*Config)
	queue func(*embeddedmq.Config)
	// pipe is the SQL of a shared pipe named "by_user", when set.
	pipe string
}

// fixture is one API over its own database, queue, cache and dedupe store.
type fixture struct {
	api      *API
	handler  http.Handler
	store    *chdbstore.Store
	schema   *schemacache.Cache
	queue    *embeddedmq.Queue
	dedupe   *localdedupe.Store
	commits  *commits.Log
	limiter  *limits.Limiter
	settings *settings.Manager
	reg      *prometheus.Registry
	db       string
	// Keys of tenant acme: all scopes; query only; ingest/query/admin restricted to table events.
	all, queryOnly, events string
	// other is a key of tenant globex, with every scope, over its own database.
	other    string
	operator string
	otherDB  string
}

func newFixture(t testing.TB, o options) *fixture {
	t.Helper()
	ctx := t.Context()
	st := engine.Store(t)
	f := &fixture{store: st, db: testsvc.UniqueName(t, "api"), otherDB: testsvc.UniqueName(t, "apiother")}
	for _, db := range []string{f.db, f.otherDB} {
		exec(t, st, "CREATE DATABASE "+db)
		exec(t, st, fmt.Sprintf(eventsDDL, db))
		t.Cleanup(func() {
			_ = st.Exec(context.Background(), store.Target{Database: "default"}, "DROP DATABASE IF EXISTS "+db)
		})
	}

	dir := t.TempDir()
	f.writeSettings(t, filepath.Join(dir, "settings"), o)
	mgr, err := settings.New(settings.Config{Dir: filepath.Join(dir, "settings")}, settings.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close(context.Background()) })
	f.settings = mgr
	opKey := filepath.Join(dir, "operator.key")
	f.operator = strings.Repeat("0123456789abcdef", 4)
	if err := os.WriteFile(opKey, []byte(f.operator+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(auth.Config{OperatorKeyFile: opKey, AllowAnonymous: o.anonymous}, auth.Deps{Settings: mgr})
	if err != nil {
		t.Fatal(err)
	}
	f.limiter, err = limits.New(limits.Config{}, limits.Deps{Settings: mgr})
	if err != nil {
		t.Fatal(err)
	}

	qcfg := embeddedmq.Config{Dir: filepath.Join(dir, "mq"), Partitions: 1}
	if o.queue != nil {
		o.queue(&qcfg)
	}
	f.queue, err = embeddedmq.New(qcfg, embeddedmq.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.queue.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.queue.Close(context.Background()) })

	c, err := localcache.New(localcache.Config{}, localcache.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	q, err := query.New(query.Config{}, query.Deps{Store: st, Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	live := &pipes.Live{}
	tp, findings := pipes.FromSettings(mgr.Current())
	if len(findings) > 0 {
		t.Fatalf("pipes: %v", findings)
	}
	live.Store(tp)
	ph, err := pipes.NewHandler(pipes.Deps{Pipes: live, Query: q})
	if err != nil {
		t.Fatal(err)
	}
	sse, err := stream.New(stream.Config{}, stream.Deps{Queue: f.queue})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sse.Close(context.Background()) })

	f.schema = schemacache.New(st, schemacache.Options{})
	f.reg = prometheus.NewRegistry()
	deps := Deps{
		Store: st, Schema: f.schema, Targets: f.targets(o), Queue: f.queue, DLQ: f.queue.DLQ(),
		Query: q, Pipes: ph, Stream: sse, Invalidator: tenantBump{c}, Auth: authn, Limits: f.limiter,
		SettingsReload: mgr.ReloadHandler(), Registerer: f.reg,
		Retention: func(tenant string) time.Duration {
			if t, ok := mgr.Current().Tenant(tenant); ok {
				return t.Dedupe.Retention
			}
			return 0
		},
	}
	if !o.noCommits {
		f.commits = commits.New(1024)
		deps.Commits = f.commits
	}
	if o.noDLQ {
		deps.DLQ = nil
	}
	if !o.noDedupe {
		f.dedupe, err = localdedupe.New(localdedupe.Config{Dir: filepath.Join(dir, "dedupe")}, localdedupe.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.dedupe.Close(context.Background()) })
		deps.Dedupe = f.dedupe
		if o.dedupe != nil {
			deps.Dedupe = o.dedupe(f.dedupe)
		}
	}
	cfg := Config{WaitTimeout: 2 * time.Second}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	f.api, err = New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	if err := f.api.Routes(mux); err != nil {
		t.Fatal(err)
	}
	f.handler = httpx.Routes(mux)
	return f
}

// writeSettings writes the settings directory: tenant acme (the fixture's database, three keys,
// o.limits, an Idempotency-Key retention of 2h) and tenant globex (its own database and key).
func (f *fixture) writeSettings(t testing.TB, dir string, o options) {
	t.Helper()
	key := func(scopes, tables string) (token, entry string) {
		k, err := auth.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		entry = fmt.Sprintf("  - {id: %s, hash: %s, scopes: [%s]", k.ID, k.Hash, scopes)
		if tables != "" {
			entry += ", tables: [" + tables + "]"
		}
		return k.Token, entry + "}\n"
	}
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tenants/.keep", "")
	if o.pipe != "" {
		write("pipes/by_user.sql", o.pipe)
	}
	if o.anonymous {
		return
	}
	acme := "database: " + f.db + "\nkeys:\n"
	var e1, e2, e3, e4 string
	f.all, e1 = key("ingest, query, stream, admin", "")
	f.queryOnly, e2 = key("query", "")
	f.events, e3 = key("ingest, query, admin", "events")
	acme += e1 + e2 + e3
	if o.limits != "" {
		acme += "limits: " + o.limits + "\n"
	}
	acme += "dedupe: {retention: 2h}\n"
	write("tenants/acme.yaml", acme)
	f.other, e4 = key("ingest, query, stream, admin", "")
	write("tenants/globex.yaml", "database: "+f.otherDB+"\nkeys:\n"+e4)
}

// targets maps the settings' tenants to their databases, as the binary does; the anonymous
// tenant gets the fixture's database only with o.anonymousDB.
func (f *fixture) targets(o options) Targets {
	return targetFunc(func(tenant string) (store.Target, error) {
		if t, ok := f.settings.Current().Tenant(tenant); ok {
			return store.Target{Tenant: tenant, Database: t.Database}, nil
		}
		if o.anonymousDB && tenant == auth.DefaultAnonymousTenant {
			return store.Target{Tenant: tenant, Database: f.db}, nil
		}
		return store.Target{}, fmt.Errorf("tenant %q is not in the settings", tenant)
	})
}

type targetFunc func(tenant string) (store.Target, error)

func (fn targetFunc) Target(tenant string) (store.Target, error) { return fn(tenant) }

// tenantBump bumps a tenant's cache versions in the real local cache after operator SQL.
type tenantBump struct{ c *localcache.Cache }

func (b tenantBump) BumpTenant(ctx context.Context, tenant string) { _ = b.c.BumpTenant(ctx, tenant) }

func exec(t testing.TB, s store.Execer, sql string) {
	t.Helper()
	if err := s.Exec(t.Context(), store.Target{Database: "default"}, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// call is one request to the fixture's handler.
type call struct {
	method, path, key string
	body              string
	header            map[string]string
	bodyReader        io.Reader // instead of body
}

// response is what the handler answered.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends c through the full route stack (JSON 404/405, authentication, rate limits, handler).
func (f *fixture) do(t testing.TB, c call) response {
	t.Helper()
	var body io.Reader = strings.NewReader(c.body)
	if c.bodyReader != nil {
		body = c.bodyReader
	}
	req := httptest.NewRequestWithContext(t.Context(), c.method, c.path, body)
	if c.bodyReader != nil {
		req.ContentLength = -1
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if c.method == http.MethodPost && c.header["Content-Type"] == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// ingest posts body (NDJSON unless it starts with [ or {) to table with key.
func (f *fixture) ingest(t testing.TB, key, table, body string, header ...string) response {
	t.Helper()
	h := map[string]string{"Content-Type": "application/x-ndjson"}
	if strings.HasPrefix(body, "[") || strings.HasPrefix(body, "{") && !strings.Contains(body, "\n") {
		h["Content-Type"] = "application/json"
	}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	return f.do(t, call{method: http.MethodPost, path: "/v1/ingest/" + table, key: key, body: body, header: h})
}

// errorBody is the JSON error form.
type errorBody struct {
	Code      string          `json:"code"`
	Message   string          `json:"error"`
	Retryable bool            `json:"retryable"`
	Details   json.RawMessage `json:"details"`
}

// wantError checks status and code, that the code is documented in docs/, and returns the body.
func wantError(t *testing.T, r response, status int, code string) errorBody {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("got %d %q, want a JSON error %d %s", r.status, r.body, status, code)
	}
	if r.status != status || e.Code != code {
		t.Fatalf("got %d %s (%s), want %d %s", r.status, e.Code, e.Message, status, code)
	}
	if !documentedCodes(t)[code] {
		t.Errorf("code %s is answered but not documented in docs/*.md", code)
	}
	return e
}

// wantJSON checks the status and decodes the body into v.
func wantJSON(t *testing.T, r response, status int, v any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("got %d %s, want %d", r.status, r.body, status)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("decoding %q: %v", r.body, err)
		}
	}
}

// settleQueued settles every record waiting in the queue as the ingest role would and tells the
// commit log: dead-lettered with reason when one is given, else acknowledged as inserted. It
// returns the records, so a test can count what a request enqueued.
func (f *fixture) settleQueued(t *testing.T, reason *mq.Reason) []mq.Record {
	t.Helper()
	ctx := t.Context()
	sub, err := f.queue.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var out []mq.Record
	for {
		ds, err := sub.Fetch(ctx, 100, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			return out
		}
		for _, d := range ds {
			o := commits.Inserted
			if reason != nil {
				o = commits.DeadLettered
				err = d.(mq.DeadLetterer).DeadLetter(ctx, *reason)
			} else {
				err = d.Ack(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range d.Records() {
				if f.commits != nil {
					f.commits.Settled(r.Tenant, r.Table, r.Position, o)
				}
				out = append(out, r)
			}
		}
	}
}

// histCount is how many ingest requests ended with outcome (wavehouse_ingest_request_duration_seconds).
func histCount(t *testing.T, f *fixture, outcome string) uint64 {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "wavehouse_ingest_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
