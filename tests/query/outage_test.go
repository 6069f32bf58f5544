package query_test

import (
	"net/http"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestStoreDown kills the ClickHouse server under the service: queries and pipes answer
// 503 store.unavailable with Retry-After, a cached result is still served, and answers
// resume when the server is back.
func TestStoreDown(t *testing.T) {
	ch := testsvc.StartClickHouse(t)
	e := newEnv(t, clickhouseStore(t, ch.NativeAddr), nil)
	cached := map[string]any{"sql": "SELECT count() AS c FROM events"}
	if r := e.query(t, cached); r.code != 200 {
		t.Fatalf("before: %d %s", r.code, r.body)
	}
	ch.Kill(t)
	for name, send := range map[string]func() response{
		"query": func() response { return e.query(t, map[string]any{"sql": "SELECT id FROM events ORDER BY id"}) },
		"uncached query": func() response {
			return e.do(t, http.MethodPost, "/v1/query?cache=false", `{"sql":"SELECT 1 AS x","format":"csv"}`)
		},
		"pipe": func() response { return e.do(t, http.MethodGet, "/v1/pipes/by_user?user=ann", "") },
	} {
		r := send()
		if r.code != 503 || r.json(t)["code"] != "store.unavailable" || r.json(t)["retryable"] != true || r.header.Get("Retry-After") == "" {
			t.Errorf("%s while the store is down: %d %v %s", name, r.code, r.header, r.body)
		}
	}
	if r := e.query(t, cached); r.code != 200 || r.cache() != "HIT" {
		t.Errorf("a cached result was not served while the store is down: %d %s %s", r.code, r.cache(), r.body)
	}
	ch.Start(t)
	if r := e.do(t, http.MethodGet, "/v1/pipes/by_user?user=ann", ""); r.code != 200 || len(r.data(t)) != 2 {
		t.Fatalf("after restart: %d %s", r.code, r.body)
	}
}
