package query

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store"
)

func TestMemoIsBounded(t *testing.T) {
	var m memo[int]
	for i := range memoMaxEntries + 10 {
		m.put(fmt.Sprint(i), i, 0)
		if n := m.len(); n > memoMaxEntries {
			t.Fatalf("memo holds %d entries; bound is %d", n, memoMaxEntries)
		}
	}
	if v, ok := m.get([]byte(fmt.Sprint(memoMaxEntries + 9))); !ok || v != memoMaxEntries+9 {
		t.Fatalf("latest entry: %d %v", v, ok)
	}
	m.put(strings.Repeat("x", memoMaxKey+1), 1, 0)
	if _, ok := m.getString(strings.Repeat("x", memoMaxKey+1)); ok {
		t.Fatal("a text above memoMaxKey was memoised")
	}
	var big memo[int]
	for i := range 100 {
		big.put(fmt.Sprint(i), i, memoMaxBytes/10)
		if big.bytes > memoMaxBytes {
			t.Fatalf("memo accounts %d bytes; bound is %d", big.bytes, memoMaxBytes)
		}
	}
}

// TestMemoisedBodiesKeepPerRequestDecisions sends the same bodies again and again: what the
// memo answers from the body's bytes must not stand in for what depends on the request (the
// tenant, ?cache=false) or let a rejected statement through on a later try.
func TestMemoisedBodiesKeepPerRequestDecisions(t *testing.T) {
	f := newFixture(t, nil)
	for range 3 {
		if r := f.query(t, `{"sql":"DROP TABLE events"}`); r.code != 400 || r.body["code"] != "query.rejected" {
			t.Fatalf("write statement: %+v", r)
		}
		if r := f.query(t, `{"sql":"SELECT 1","format":"xml"}`); r.code != 400 {
			t.Fatalf("bad format: %+v", r)
		}
	}
	const q = `{"sql":"SELECT count() AS c FROM events"}`
	if r := f.query(t, q); r.cache != "MISS" {
		t.Fatalf("fill: %+v", r)
	}
	rec := httptest.NewRecorder()
	f.svc.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/query?cache=false", strings.NewReader(q)), f.target.Tenant, f.target)
	if rec.Header().Get("X-Cache") != "BYPASS" {
		t.Fatalf("?cache=false on a memoised body: X-Cache %q", rec.Header().Get("X-Cache"))
	}
	// Another tenant with its own database sends the same body: its own result, never the
	// first tenant's cached one.
	db2 := f.target.Database + "_b"
	for _, sql := range []string{"CREATE DATABASE " + db2, "CREATE TABLE " + db2 + ".events (id UInt64, user String) ENGINE = MergeTree ORDER BY id"} {
		if err := f.store.Exec(t.Context(), store.Target{Database: "default"}, sql); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = f.store.Exec(context.Background(), store.Target{Database: "default"}, "DROP DATABASE IF EXISTS "+db2)
	})
	other := store.Target{Tenant: "t2", Database: db2}
	rec = httptest.NewRecorder()
	f.svc.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/query", strings.NewReader(q)), other.Tenant, other)
	if rec.Header().Get("X-Cache") != "MISS" || !strings.Contains(rec.Body.String(), `"c":"0"`) && !strings.Contains(rec.Body.String(), `"c":0`) {
		t.Fatalf("second tenant: X-Cache %q body %s", rec.Header().Get("X-Cache"), rec.Body)
	}
}
