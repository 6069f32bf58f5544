package console

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/settings"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/testutil/chdbtest"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

var engine chdbtest.Engine

func TestMain(m *testing.M) {
	code := m.Run()
	engine.Close()
	os.Exit(code)
}

type targetFunc func(tenant string) (store.Target, error)

func (f targetFunc) Target(tenant string) (store.Target, error) { return f(tenant) }

// newConsole serves a console over a real chDB store and settings with the tenants acme (its
// database db) and gone (no database): the operator key is returned.
func newConsole(t *testing.T) (*httptest.Server, string, string) {
	t.Helper()
	st := engine.Store(t)
	db := testsvc.UniqueName(t, "console")
	for _, sql := range []string{"CREATE DATABASE " + db, "CREATE TABLE " + db + ".events (id String, n UInt32) ENGINE = MergeTree ORDER BY id",
		"INSERT INTO " + db + ".events VALUES ('a', 1)", "INSERT INTO " + db + ".events VALUES ('b', 2)"} {
		if err := st.Exec(t.Context(), store.Target{Database: "default"}, sql); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = st.Exec(context.Background(), store.Target{Database: "default"}, "DROP DATABASE IF EXISTS "+db)
	})
	dir := t.TempDir()
	for name, content := range map[string]string{"settings/tenants/acme.yaml": "database: " + db + "\n", "settings/tenants/gone.yaml": "database: gone_db\n",
		"operator.key": strings.Repeat("k", 40)} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mgr, err := settings.New(settings.Config{Dir: filepath.Join(dir, "settings")}, settings.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close(context.Background()) })
	authn, err := auth.New(auth.Config{OperatorKeyFile: filepath.Join(dir, "operator.key")}, auth.Deps{Settings: mgr})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{}, Deps{Auth: authn, Metrics: prometheus.NewRegistry(), Store: st, Targets: targetFunc(func(tenant string) (store.Target, error) {
		switch tenant {
		case "acme":
			return store.Target{Database: db}, nil
		case "gone":
			return store.Target{Database: "gone_db"}, nil
		}
		return store.Target{}, errors.New("no such tenant")
	})})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	c.Routes(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs, strings.Repeat("k", 40), db
}

func get(t *testing.T, hs *httptest.Server, path string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, hs.URL+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestConsolePagesNeedTheLogin: without a session the page is the login form (401) and the
// assets and JSON are refused; after the login form posted the operator key, the cookie serves
// them, with the console's security headers.
func TestConsolePagesNeedTheLogin(t *testing.T) {
	hs, key, _ := newConsole(t)
	resp, body := get(t, hs, "/console/", "Accept", "text/html")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `name="key"`) || strings.Contains(body, "app.js") {
		t.Fatalf("GET /console/ without a session: %d %.200s, want 401 and only the login form", resp.StatusCode, body)
	}
	for _, p := range []string{"/console/app.js", "/console/chart.js", "/console/api/stats", "/console/api/session"} {
		if resp, body := get(t, hs, p); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "auth.console_login_required") {
			t.Errorf("GET %s without a session: %d %.100s, want 401 auth.console_login_required", p, resp.StatusCode, body)
		}
	}
	client := hs.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.PostForm(hs.URL+"/console/login", url.Values{"key": {key}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var session string
	for _, c := range resp.Cookies() {
		if c.Name == auth.ConsoleCookie {
			session = c.Name + "=" + c.Value
		}
	}
	if resp.StatusCode != http.StatusSeeOther || session == "" {
		t.Fatalf("login: %d, cookie %q; want 303 to /console/ with the session cookie", resp.StatusCode, session)
	}
	resp, body = get(t, hs, "/console/", "Cookie", session)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "view-overview") || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("GET /console/ with the session: %d (CSP %q)", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
	if resp, body := get(t, hs, "/console/app.js", "Cookie", session); resp.StatusCode != http.StatusOK || !strings.Contains(body, "X-Wavehouse-Console") {
		t.Fatalf("GET /console/app.js with the session: %d", resp.StatusCode)
	}
	resp, body = get(t, hs, "/console/api/session", "Cookie", session)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"tenants":["acme","gone"]`) {
		t.Fatalf("session: %d %s", resp.StatusCode, body)
	}
}

// TestTablesFromTheStore: the tables view lists each table with its columns and its parts as
// system.parts has them; a tenant whose database is missing names the store in errors.
func TestTablesFromTheStore(t *testing.T) {
	hs, key, db := newConsole(t)
	resp, body := get(t, hs, "/console/api/tables?tenant=acme", "Authorization", "Bearer "+key)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tables: %d %s", resp.StatusCode, body)
	}
	var out struct {
		Database string            `json:"database"`
		Tables   []tableRow        `json:"tables"`
		Errors   map[string]string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	if out.Database != db || len(out.Tables) != 1 || len(out.Errors) != 0 {
		t.Fatalf("tables %+v", out)
	}
	ev := out.Tables[0]
	if ev.Name != "events" || ev.Engine != "MergeTree" || len(ev.Columns) != 2 || ev.Columns[1] != (column{Name: "n", Type: "UInt32"}) ||
		ev.ActiveParts < 1 || ev.PartsLastMinute < 1 || ev.LastPartAt == 0 {
		t.Fatalf("events %+v, want MergeTree with columns id, n, two inserts' parts", ev)
	}
	if resp, body := get(t, hs, "/console/api/tables", "Authorization", "Bearer "+key); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "auth.tenant_required") {
		t.Fatalf("tables without a tenant: %d %s", resp.StatusCode, body)
	}
	resp, body = get(t, hs, "/console/api/tables?tenant=gone", "Authorization", "Bearer "+key)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"store":`) {
		t.Fatalf("tables of a tenant without its database: %d %s, want 200 naming the store in errors", resp.StatusCode, body)
	}
}
