package query

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/localcache"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/chdbstore"
	"github.com/wavehouse/wavehouse/internal/testutil/chdbtest"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// fixture is a query service over the embedded engine and the local cache, with one table.
type fixture struct {
	svc    *Service
	store  *chdbstore.Store
	cache  *localcache.Cache
	target store.Target
}

// engine is the process's one chDB engine, shared by every test of this package.
var engine chdbtest.Engine

func TestMain(m *testing.M) {
	code := m.Run()
	engine.Close()
	os.Exit(code)
}

func newFixture(t testing.TB, wrap func(store.Querier) store.Querier) *fixture {
	t.Helper()
	s := engine.Store(t)
	db := testsvc.UniqueName(t, "q")
	target := store.Target{Tenant: "t1", Database: db}
	ctx := t.Context()
	for _, sql := range []string{
		"CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".events (id UInt64, user String) ENGINE = MergeTree ORDER BY id",
	} {
		if err := s.Exec(ctx, store.Target{Database: "default"}, sql); err != nil {
			t.Fatal(err)
		}
	}
	c, err := localcache.New(localcache.Config{}, localcache.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	var q store.Querier = s
	if wrap != nil {
		q = wrap(s)
	}
	svc, err := New(Config{}, Deps{Store: q, Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{svc: svc, store: s, cache: c, target: target}
	f.insert(t, `[1,"ann"]`)
	return f
}

func (f *fixture) insert(t testing.TB, rows ...string) {
	t.Helper()
	b := store.Batch{Target: f.target, Table: "events", Columns: []string{"id", "user"}}
	for _, r := range rows {
		b.Rows = append(b.Rows, []byte(r))
	}
	if err := f.store.Insert(t.Context(), b); err != nil {
		t.Fatal(err)
	}
}

type result struct {
	cache string
	code  int
	body  map[string]any
}

func (f *fixture) query(t *testing.T, body string) result {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/query", strings.NewReader(body))
	f.svc.ServeHTTP(rec, req, f.target.Tenant, f.target)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return result{cache: rec.Header().Get("X-Cache"), code: rec.Code, body: out}
}

func TestCachedUntilInsertBumpsTheTable(t *testing.T) {
	f := newFixture(t, nil)
	const q = `{"sql":"SELECT count() AS c FROM events"}`
	if r := f.query(t, q); r.cache != "MISS" || r.code != 200 {
		t.Fatalf("first: %+v", r)
	}
	if r := f.query(t, q); r.cache != "HIT" {
		t.Fatalf("second: %+v", r)
	}
	f.insert(t, `[2,"bob"]`)
	if err := f.cache.BumpTable(t.Context(), f.target.Tenant, "events"); err != nil {
		t.Fatal(err)
	}
	r := f.query(t, q)
	if r.cache != "MISS" || r.body["data"].([]any)[0].(map[string]any)["c"].(float64) != 2 {
		t.Fatalf("after bump: %+v", r)
	}
}

// bumpingQuerier bumps the table's version from inside the store call, like an insert that
// lands while the query runs.
type bumpingQuerier struct {
	store.Querier
	bump func()
}

func (b bumpingQuerier) Query(ctx context.Context, t store.Target, q store.Query) (store.Rows, error) {
	b.bump()
	return b.Querier.Query(ctx, t, q)
}

func TestBumpDuringQueryOrphansTheFill(t *testing.T) {
	var f *fixture
	armed := false
	f = newFixture(t, func(q store.Querier) store.Querier {
		return bumpingQuerier{Querier: q, bump: func() {
			if armed {
				armed = false
				f.insert(t, `[2,"bob"]`)
				if err := f.cache.BumpTable(context.Background(), f.target.Tenant, "events"); err != nil {
					t.Error(err)
				}
			}
		}}
	})
	armed = true
	const q = `{"sql":"SELECT count() AS c FROM events"}`
	first := f.query(t, q)
	if first.cache != "MISS" {
		t.Fatalf("first: %+v", first)
	}
	// The fill was filed under the versions read before the bump, so the next lookup misses
	// and sees the row the mid-query insert added.
	second := f.query(t, q)
	if second.cache != "MISS" || second.body["data"].([]any)[0].(map[string]any)["c"].(float64) != 2 {
		t.Fatalf("second: %+v (a stale fill was served)", second)
	}
}

func TestConcurrentIdenticalColdQueriesRunOnce(t *testing.T) {
	f := newFixture(t, nil)
	const q = `{"sql":"SELECT id, user, sleepEachRow(0.2) FROM events"}`
	var wg sync.WaitGroup
	codes := make(chan int, 100)
	for range 100 {
		wg.Go(func() { codes <- f.query(t, q).code })
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Fatalf("status %d", c)
		}
	}
	if n := f.svc.Executions(); n != 1 {
		t.Fatalf("100 identical cold queries ran %d times, want 1", n)
	}
}

func TestRejectsWritesAndBindsParametersAsData(t *testing.T) {
	f := newFixture(t, nil)
	for _, sql := range []string{
		"DROP TABLE events", "/* select */ INSERT INTO events VALUES (1,'x')",
		"WITH 1 AS x ALTER TABLE events DELETE WHERE 1", "SELECT 1; DROP TABLE events",
	} {
		b, _ := json.Marshal(map[string]string{"sql": sql})
		if r := f.query(t, string(b)); r.code != 400 || r.body["code"] != "query.rejected" {
			t.Errorf("%q: %+v", sql, r)
		}
	}
	r := f.query(t, `{"sql":"SELECT count() AS c FROM events WHERE user = {u:String}","params":{"u":"x' OR 1=1 --"}}`)
	if r.code != 200 || r.body["data"].([]any)[0].(map[string]any)["c"].(float64) != 0 {
		t.Fatalf("injection through a parameter was not treated as data: %+v", r)
	}
}

func TestCacheFalseBypasses(t *testing.T) {
	f := newFixture(t, nil)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/query?cache=false", strings.NewReader(`{"sql":"SELECT 1"}`))
	f.svc.ServeHTTP(rec, req, f.target.Tenant, f.target)
	if rec.Header().Get("X-Cache") != "BYPASS" || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("headers %v", rec.Header())
	}
	var _ cache.Results = f.cache
}
