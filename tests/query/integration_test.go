package query_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestQueryAndPipes runs the integration cases on both store backends. Each backend's
// server is shared by its cases; each case has its own database.
func TestQueryAndPipes(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t)
			t.Run("formats keep 64-bit integers exact", func(t *testing.T) { testFormats(t, newEnv(t, s, nil)) })
			t.Run("typed parameters", func(t *testing.T) { testTypedParams(t, newEnv(t, s, nil)) })
			t.Run("errors are mapped", func(t *testing.T) { testErrors(t, newEnv(t, s, nil)) })
			t.Run("pipes", func(t *testing.T) { testPipes(t, newEnv(t, s, nil)) })
			t.Run("injection is data", func(t *testing.T) { testInjection(t, newEnv(t, s, nil)) })
			t.Run("hidden writes never reach the store", func(t *testing.T) { testHiddenWrites(t, newEnv(t, s, nil)) })
			t.Run("100 cold queries run once", func(t *testing.T) { testSingleflight(t, newEnv(t, s, nil)) })
		})
	}
}

func testFormats(t *testing.T, e *env) {
	const sql = "SELECT id, user, big FROM events ORDER BY id"
	r := e.query(t, map[string]any{"sql": sql})
	if r.code != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("json: %d %s", r.code, r.body)
	}
	doc := r.json(t)
	if string(doc["rows"].(json.Number)) != "3" || len(doc["meta"].([]any)) != 3 || doc["statistics"] == nil {
		t.Fatalf("json document: %s", r.body)
	}
	rows := r.data(t)
	if got := rows[0]["big"].(json.Number); got != "-9223372036854775808" {
		t.Errorf("Int64 min = %s", got)
	}
	if got := rows[2]["id"].(json.Number); got != "18446744073709551615" {
		t.Errorf("UInt64 max = %s", got)
	}
	if got := rows[2]["user"]; got != "o'brien" {
		t.Errorf("user = %v", got)
	}

	r = e.query(t, map[string]any{"sql": sql, "format": "ndjson"})
	lines := strings.Split(strings.TrimSpace(string(r.body)), "\n")
	if r.code != 200 || r.header.Get("Content-Type") != "application/x-ndjson" || len(lines) != 3 {
		t.Fatalf("ndjson: %d %q", r.code, r.body)
	}
	if lines[2] != `{"id":18446744073709551615,"user":"o'brien","big":9223372036854775807}` {
		t.Errorf("ndjson line = %s", lines[2])
	}

	r = e.query(t, map[string]any{"sql": sql, "format": "csv"})
	want := "\"id\",\"user\",\"big\"\n1,\"ann\",-9223372036854775808\n3,\"ann\",42\n18446744073709551615,\"o'brien\",9223372036854775807\n"
	if r.code != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") || string(r.body) != want {
		t.Fatalf("csv: %d %q", r.code, r.body)
	}
}

func testTypedParams(t *testing.T, e *env) {
	r := e.query(t, map[string]any{
		"sql": "SELECT {u:UInt64} AS u, {i:Int64} AS i, {s:String} AS s, {d:Date} AS d, {a:Array(UInt8)} AS a",
		"params": map[string]any{
			"u": json.Number("18446744073709551615"), "i": "-9223372036854775808", "s": "it's \"quoted\" \\ ;",
			"d": "2024-02-29", "a": []int{1, 255},
		},
	})
	if r.code != 200 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	row := r.data(t)[0]
	if row["u"] != json.Number("18446744073709551615") || row["i"] != json.Number("-9223372036854775808") ||
		row["s"] != `it's "quoted" \ ;` || row["d"] != "2024-02-29" {
		t.Fatalf("row = %v", row)
	}
	// A value of the wrong type is refused by the binder, not sent as text.
	r = e.query(t, map[string]any{"sql": "SELECT {u:UInt8} AS u", "params": map[string]any{"u": 256}})
	if r.code != 400 || r.json(t)["code"] != "query.rejected" {
		t.Fatalf("out of range parameter: %d %s", r.code, r.body)
	}
}

func testErrors(t *testing.T, e *env) {
	for name, tc := range map[string]struct {
		body   map[string]any
		status int
		code   string
	}{
		"not a read statement": {map[string]any{"sql": "SELEC 1"}, 400, "query.rejected"},
		"syntax error":         {map[string]any{"sql": "SELECT FROM WHERE events"}, 400, "query.rejected"},
		"unknown format":       {map[string]any{"sql": "SELECT 1", "format": "xml"}, 400, "query.rejected"},
		"row limit":            {map[string]any{"sql": "SELECT id FROM events", "max_rows": 1}, 422, "query.limit_exceeded"},
		"unknown table":        {map[string]any{"sql": "SELECT * FROM nope"}, 404, "query.unknown_table"},
	} {
		t.Run(name, func(t *testing.T) {
			r := e.query(t, tc.body)
			if r.code != tc.status || r.json(t)["code"] != tc.code {
				t.Fatalf("got %d %s, want %d %s", r.code, r.body, tc.status, tc.code)
			}
			if tc.code == "query.limit_exceeded" && (r.json(t)["limit"] != "max_rows" || r.json(t)["value"] != json.Number("1")) {
				t.Fatalf("got %s, want the request's limit max_rows = 1 named", r.body)
			}
		})
	}
}

func testPipes(t *testing.T, e *env) {
	r := e.do(t, http.MethodGet, "/v1/pipes", "")
	var list struct {
		Pipes []struct {
			Name   string `json:"name"`
			TTL    string `json:"ttl"`
			Params []struct {
				Name, Type string
				Required   bool
			} `json:"params"`
		} `json:"pipes"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil || r.code != 200 || len(list.Pipes) != 3 {
		t.Fatalf("list: %d %s", r.code, r.body)
	}
	if p := list.Pipes[1]; p.Name != "count" || list.Pipes[2].TTL != "1m0s" || list.Pipes[0].Params[0].Name != "user" || !list.Pipes[0].Params[0].Required {
		t.Fatalf("list: %s", r.body)
	}

	// Query string parameters, read as their declared types.
	r = e.do(t, http.MethodGet, "/v1/pipes/by_user?user=ann&min_id=2", "")
	if rows := r.data(t); r.code != 200 || len(rows) != 1 || rows[0]["id"] != json.Number("3") {
		t.Fatalf("GET: %d %s", r.code, r.body)
	}
	// A JSON body, another format, and the cache.
	body := `{"params":{"user":"o'brien"},"format":"ndjson"}`
	r = e.do(t, http.MethodPost, "/v1/pipes/by_user", body)
	if r.code != 200 || strings.TrimSpace(string(r.body)) != `{"id":18446744073709551615,"user":"o'brien","big":9223372036854775807}` || r.cache() != "MISS" {
		t.Fatalf("POST: %d %s %s", r.code, r.cache(), r.body)
	}
	if r = e.do(t, http.MethodPost, "/v1/pipes/by_user", body); r.cache() != "HIT" {
		t.Fatalf("second POST: %s", r.cache())
	}
	r = e.do(t, http.MethodGet, "/v1/pipes/typed?u=18446744073709551615&i=-5&d=2024-01-31&tags=%5B%22a%22%2C%22b%22%5D&format=csv", "")
	if r.code != 200 || string(r.body) != "\"u\",\"i\",\"d\",\"tags\"\n18446744073709551615,-5,\"2024-01-31\",\"[\"\"a\"\",\"\"b\"\"]\"\n" {
		t.Fatalf("typed: %d %q", r.code, r.body)
	}

	// Parameter errors are found before any SQL runs and name the parameter.
	before := e.calls.n.Load()
	for path, want := range map[string]string{
		"/v1/pipes/by_user":                          "pipe.missing_param",
		"/v1/pipes/by_user?user=a&min_id=-1":         "pipe.invalid_param",
		"/v1/pipes/by_user?user=a&min_id=1%20OR%201": "pipe.invalid_param",
		"/v1/pipes/by_user?user=a&nope=1":            "pipe.unknown_param",
		"/v1/pipes/typed?u=1&i=1&d=2024-02-30":       "pipe.invalid_param",
	} {
		r := e.do(t, http.MethodGet, path, "")
		doc := r.json(t)
		if r.code != 400 || doc["code"] != want {
			t.Errorf("%s: %d %s, want %s", path, r.code, r.body, want)
		}
	}
	r = e.do(t, http.MethodGet, "/v1/pipes/by_user?user=a&min_id=x", "")
	if d, _ := r.json(t)["details"].(map[string]any); d["param"] != "min_id" || !strings.Contains(string(r.body), "min_id") {
		t.Errorf("invalid parameter not named: %s", r.body)
	}
	if n := e.calls.n.Load() - before; n != 0 {
		t.Fatalf("%d store calls for invalid parameters", n)
	}
	if r := e.do(t, http.MethodGet, "/v1/pipes/missing", ""); r.code != 404 || r.json(t)["code"] != "pipe.not_found" {
		t.Fatalf("unknown pipe: %d %s", r.code, r.body)
	}
}

func testSingleflight(t *testing.T, e *env) {
	for name, send := range map[string]func() response{
		"query": func() response {
			return e.query(t, map[string]any{"sql": "SELECT id, user, sleep(0.2) AS s FROM events WHERE id = 1"})
		},
		"pipe": func() response { return e.do(t, http.MethodGet, "/v1/pipes/by_user?user=ann&min_id=0", "") },
	} {
		t.Run(name, func(t *testing.T) {
			before := e.calls.n.Load()
			var wg sync.WaitGroup
			codes := make(chan int, 100)
			for range 100 {
				wg.Go(func() { codes <- send().code })
			}
			wg.Wait()
			close(codes)
			for c := range codes {
				if c != 200 {
					t.Fatalf("status %d", c)
				}
			}
			if n := e.calls.n.Load() - before; n != 1 {
				t.Fatalf("100 identical cold requests reached the store %d times, want 1", n)
			}
		})
	}
}
