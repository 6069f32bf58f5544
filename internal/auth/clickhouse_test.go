package auth

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestClickHouseRoutes: the ClickHouse interface takes the API key as a ClickHouse client sends
// its password (Basic, X-ClickHouse-Key, ?password=) as well as Bearer, ignores the user, strips
// the credential parameters from the URL, refuses a key with neither ingest nor query, and
// answers in ClickHouse's error form; /ping needs no credential.
func TestClickHouseRoutes(t *testing.T) {
	f := newFixture(t, false, twoTenants)
	key := f.keys["ingest"].Token
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	send := func(path string, hdr ...string) (*httptest.ResponseRecorder, *http.Request) {
		r := httptest.NewRequest(http.MethodPost, path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		f.mux.ServeHTTP(w, r)
		return w, r
	}
	for name, c := range map[string]struct {
		path string
		hdr  []string
	}{
		"bearer":          {"/", []string{"Authorization", "Bearer " + key}},
		"basic":           {"/", []string{"Authorization", basic("whoever", key)}},
		"x-clickhouse":    {"/", []string{ClickHouseKeyHeader, key, ClickHouseUserHeader, "default"}},
		"password param":  {"/?user=u1&password=" + key + "&query=SELECT+1", nil},
		"basic wins":      {"/?password=wrong", []string{"Authorization", basic("", key)}},
		"key header wins": {"/?password=wrong", []string{ClickHouseKeyHeader, key}},
	} {
		w, r := send(c.path, c.hdr...)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"Tenant":"acme"`) {
			t.Errorf("%s: %d %s", name, w.Code, w.Body)
		}
		if q := r.URL.Query(); q.Has("password") || q.Has("user") || strings.Contains(r.URL.RawQuery, key) {
			t.Errorf("%s: the credential parameters are still in the URL: %s", name, r.URL.RawQuery)
		}
	}
	for name, c := range map[string]struct {
		hdr          []string
		status       int
		code, excode string
	}{
		"no credential":    {nil, 401, "auth.missing_key", "516"},
		"empty password":   {[]string{"Authorization", basic("default", "")}, 401, "auth.missing_key", "516"},
		"wrong key":        {[]string{"Authorization", basic("default", "wh_ffffffffffff_00")}, 401, "auth.invalid_key", "516"},
		"stream-only key":  {[]string{ClickHouseKeyHeader, f.keys["stream"].Token}, 403, "auth.missing_scope", "497"},
		"the operator key": {[]string{ClickHouseKeyHeader, f.operator}, 403, "auth.operator_key_not_allowed", "497"},
	} {
		w, _ := send("/", c.hdr...)
		if w.Code != c.status || w.Header().Get("X-ClickHouse-Exception-Code") != c.excode || w.Header().Get("X-Wavehouse-Error-Code") != c.code ||
			!strings.HasPrefix(w.Body.String(), "Code: "+c.excode+". DB::Exception: ") {
			t.Errorf("%s: %d %v %q, want %d %s (%s) in ClickHouse's form", name, w.Code, w.Header(), w.Body, c.status, c.code, c.excode)
		}
	}
	// Asked for JSON, the same refusal is the gateway's JSON error.
	if w, _ := send("/", "Accept", "application/json"); w.Code != 401 || !strings.Contains(w.Body.String(), `"code":"auth.missing_key"`) {
		t.Errorf("JSON form: %d %s", w.Code, w.Body)
	}
	r := httptest.NewRequest(http.MethodGet, "/ping", nil)
	w := httptest.NewRecorder()
	f.mux.ServeHTTP(w, r)
	if w.Code != http.StatusInternalServerError || w.Body.String() != "no principal\n" {
		t.Errorf("/ping must reach its handler without a credential: %d %s", w.Code, w.Body)
	}
}

func TestCheck(t *testing.T) {
	p := Principal{Tenant: "acme", Scopes: []Scope{ScopeIngest}, Tables: []string{"pages"}}
	if e := Check(p, ScopeIngest, "pages"); e != nil {
		t.Fatal(e)
	}
	if e := Check(p, ScopeQuery, ""); e == nil || e.Code != "auth.missing_scope" {
		t.Fatalf("got %+v", e)
	}
	if e := Check(p, ScopeIngest, "events"); e == nil || e.Code != "auth.table_not_allowed" {
		t.Fatalf("got %+v", e)
	}
	if e := Check(Principal{Operator: true}, ScopeIngest, ""); e == nil {
		t.Fatal("operator allowed")
	}
}
