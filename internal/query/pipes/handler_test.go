package pipes

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/wavehouse/wavehouse/internal/query"
	"github.com/wavehouse/wavehouse/internal/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder captures the request the handler hands to the query service. The query path
// itself is tested end to end over real stores in tests/query.
type recorder struct {
	got   *query.Request
	calls int
}

func (r *recorder) Serve(w http.ResponseWriter, _ context.Context, _ string, _ store.Target, req query.Request) {
	r.calls++
	r.got = &req
	w.WriteHeader(http.StatusOK)
}

func newTestHandler(t *testing.T) (*Handler, *recorder, *http.ServeMux) {
	t.Helper()
	p, err := Parse("top_users", topUsers)
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(p)
	if err != nil {
		t.Fatal(err)
	}
	var reg Registry
	reg.Swap(set)
	rec := &recorder{}
	h, err := NewHandler(Deps{Pipes: &reg, Query: rec})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	target := store.Target{Tenant: "t", Database: "db"}
	mux.HandleFunc("GET /v1/pipes", func(w http.ResponseWriter, r *http.Request) { h.List(w, r, "t") })
	mux.HandleFunc("GET /v1/pipes/{name}", func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r, "t", target) })
	mux.HandleFunc("POST /v1/pipes/{name}", func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r, "t", target) })
	return h, rec, mux
}

func serve(mux *http.ServeMux, method, target, body string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, req)
	return w
}

func TestHandlerBindsParametersAndOptions(t *testing.T) {
	_, rec, mux := newTestHandler(t)
	w := serve(mux, http.MethodPost, "/v1/pipes/top_users?day=2024-01-02&cache=false",
		`{"params":{"limit":5,"ids":[18446744073709551615]},"format":"CSV","max_rows":7}`)
	if w.Code != 200 || rec.calls != 1 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	req := rec.got
	if req.SQL == "" || strings.Contains(req.SQL, "2024-01-02") || req.Format != query.FormatCSV || req.MaxRows != 7 || !req.NoCache {
		t.Fatalf("request: %+v", req)
	}
	want := map[string]string{"day": `"2024-01-02"`, "limit": "5", "ids": "[18446744073709551615]", "label": "null"}
	for k, v := range want {
		if string(req.Params[k]) != v {
			t.Errorf("param %s = %s, want %s", k, req.Params[k], v)
		}
	}
	serve(mux, http.MethodGet, "/v1/pipes/top_users?day=2024-01-02", "", "Cache-Control", "no-cache")
	if !rec.got.NoCache || rec.got.Format != query.FormatJSON {
		t.Fatalf("GET request: %+v", rec.got)
	}
}

func TestHandlerRefusesBadRequestsBeforeTheQuery(t *testing.T) {
	_, rec, mux := newTestHandler(t)
	for name, tc := range map[string]struct {
		method, target, body string
		status               int
		code                 string
	}{
		"unknown pipe":   {"GET", "/v1/pipes/nope", "", 404, "pipe.not_found"},
		"missing":        {"GET", "/v1/pipes/top_users", "", 400, "pipe.missing_param"},
		"invalid":        {"GET", "/v1/pipes/top_users?day=2024-13-01", "", 400, "pipe.invalid_param"},
		"unknown":        {"GET", "/v1/pipes/top_users?day=2024-01-01&x=1", "", 400, "pipe.unknown_param"},
		"twice":          {"POST", "/v1/pipes/top_users?day=2024-01-01", `{"params":{"day":"2024-01-01"}}`, 400, "pipe.invalid_request"},
		"repeated":       {"GET", "/v1/pipes/top_users?day=2024-01-01&day=2024-01-02", "", 400, "pipe.invalid_request"},
		"bad json":       {"POST", "/v1/pipes/top_users", `{"params":`, 400, "pipe.invalid_request"},
		"unknown field":  {"POST", "/v1/pipes/top_users", `{"day":"2024-01-01"}`, 400, "pipe.invalid_request"},
		"bad max_rows":   {"GET", "/v1/pipes/top_users?day=2024-01-01&max_rows=-1", "", 400, "pipe.invalid_request"},
		"body too large": {"POST", "/v1/pipes/top_users", `{"params":{"label":"` + strings.Repeat("x", maxBody) + `"}}`, 400, "pipe.invalid_request"},
	} {
		t.Run(name, func(t *testing.T) {
			w := serve(mux, tc.method, tc.target, tc.body)
			var e struct{ Code string }
			_ = json.Unmarshal(w.Body.Bytes(), &e)
			if w.Code != tc.status || e.Code != tc.code {
				t.Fatalf("got %d %s, want %d %s", w.Code, w.Body, tc.status, tc.code)
			}
		})
	}
	if rec.calls != 0 {
		t.Fatalf("%d bad requests reached the query service", rec.calls)
	}
}

func TestListDescribesPipes(t *testing.T) {
	_, _, mux := newTestHandler(t)
	w := serve(mux, http.MethodGet, "/v1/pipes", "")
	var out struct {
		Pipes []struct {
			Name, Description, TTL string
			Tables                 []string
			Params                 []struct {
				Name, Type, Description string
				Required                bool
				Default                 json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || len(out.Pipes) != 1 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	p := out.Pipes[0]
	if p.Name != "top_users" || p.TTL != "30s" || len(p.Tables) != 2 || len(p.Params) != 4 {
		t.Fatalf("%s", w.Body)
	}
	if d := p.Params[0]; d.Name != "day" || d.Type != "Date" || !d.Required || d.Default != nil || d.Description != "The day to report." {
		t.Fatalf("day: %+v", d)
	}
	if l := p.Params[1]; l.Required || string(l.Default) != "10" {
		t.Fatalf("limit: %+v", l)
	}
	var empty Registry
	h, _ := NewHandler(Deps{Pipes: &empty, Query: &recorder{}})
	rw := httptest.NewRecorder()
	h.List(rw, httptest.NewRequest(http.MethodGet, "/v1/pipes", nil), "t")
	if strings.TrimSpace(rw.Body.String()) != `{"pipes":[]}` {
		t.Fatalf("empty registry: %s", rw.Body)
	}
	if _, err := NewHandler(Deps{}); err == nil {
		t.Fatal("NewHandler accepted missing deps")
	}
}
