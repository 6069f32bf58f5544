package auth

import (
	"bytes"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/wavehouse/wavehouse/internal/testutil/logbuf"

	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/settings"
)

func writeTenant(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, "tenants", name+".yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fixture is a settings directory with generated keys, an authenticator over it and a mux with
// every route of Routes() answering the principal as JSON.
type fixture struct {
	dir      string
	mgr      *settings.Manager
	auth     *Authenticator
	mux      *http.ServeMux
	log      *logbuf.Buffer
	now      time.Time
	keys     map[string]NewKey // by label
	operator string
	secrets  []string
}

func newFixture(t testing.TB, allowAnonymous bool, tenants func(f *fixture) map[string]string) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), log: &logbuf.Buffer{}, now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), keys: map[string]NewKey{}}
	for name, content := range tenants(f) {
		writeTenant(t, f.dir, name, content)
	}
	f.operator = "op-" + strings.Repeat("s3cr3t", 8)
	f.secrets = append(f.secrets, f.operator)
	opFile := filepath.Join(t.TempDir(), "operator.key")
	if err := os.WriteFile(opFile, []byte(f.operator+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mgr, err := settings.New(settings.Config{Dir: f.dir}, settings.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	f.mgr = mgr
	log := slog.New(slog.NewJSONHandler(f.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := New(Config{OperatorKeyFile: opFile, AllowAnonymous: allowAnonymous},
		Deps{Settings: mgr, Log: log, Now: func() time.Time { return f.now }, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	f.auth = a
	f.mux = http.NewServeMux()
	for pattern := range Routes() {
		err := a.Handle(f.mux, pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, ok := FromContext(r.Context())
			if !ok {
				http.Error(w, "no principal", 500)
				return
			}
			_ = json.NewEncoder(w).Encode(p)
		}))
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { f.assertNoSecretsLogged(t) })
	return f
}

func (f *fixture) assertNoSecretsLogged(t testing.TB) {
	out := f.log.String()
	for _, s := range f.secrets {
		if strings.Contains(out, s) {
			t.Errorf("a secret appears in the log output:\n%s", out)
		}
	}
}

type response struct {
	status    int
	principal Principal
	body      map[string]any
	header    http.Header
}

func (f *fixture) do(t *testing.T, method, path, token string, hdr ...string) response {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	f.mux.ServeHTTP(w, r)
	res := response{status: w.Code, header: w.Header()}
	if w.Code == http.StatusOK {
		// UseNumber: the claims come back as the principal held them, not as float64s.
		dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
		dec.UseNumber()
		if err := dec.Decode(&res.principal); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, w.Body.String())
		}
	} else if err := json.Unmarshal(w.Body.Bytes(), &res.body); err != nil {
		t.Fatalf("%s %s: error body is not JSON: %s", method, path, w.Body.String())
	}
	for _, s := range f.secrets {
		if strings.Contains(w.Body.String(), s) {
			t.Fatalf("response body contains a secret: %s", w.Body.String())
		}
	}
	return res
}

// requestFor turns a ServeMux pattern into a method and a concrete path.
func requestFor(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	path = strings.NewReplacer("{table}", "events", "{name}", "top").Replace(path)
	return method, path
}

func twoTenants(f *fixture) map[string]string {
	line := func(label, scopes string, extra string) string {
		k := f.keyFor(label)
		return fmt.Sprintf("  - {id: %s, hash: %s, scopes: [%s]%s}\n", k.ID, k.Hash, scopes, extra)
	}
	return map[string]string{
		"acme": "database: acme\nkeys:\n" +
			line("ingest", "ingest", "") + line("query", "query", "") + line("stream", "stream", "") + line("admin", "admin", "") +
			line("all", "ingest, query, stream, admin", "") +
			line("tables", "ingest, query, stream, admin", ", tables: [pages]") +
			line("expired", "ingest", ", expires: 2026-11-29T11:00:00Z") +
			line("expiring", "ingest", ", expires: 2026-11-29T13:00:00Z"),
		"globex": "database: globex\nkeys:\n" + line("globex", "ingest, query, stream, admin", ""),
	}
}

// keyFor generates the key for label once (used while writing the settings).
func (f *fixture) keyFor(label string) NewKey {
	if k, ok := f.keys[label]; ok {
		return k
	}
	k, _ := GenerateKey(nil)
	f.keys[label] = k
	f.secrets = append(f.secrets, k.Token, k.Token[len("wh_")+len(k.ID)+1:])
	return k
}

func requestHeader(authorization string) *http.Request {
	r := httptest.NewRequest("POST", "/v1/ingest/events", nil)
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	return r
}

func (f *fixture) doRaw(t *testing.T, r *http.Request) response {
	t.Helper()
	w := httptest.NewRecorder()
	f.mux.ServeHTTP(w, r)
	res := response{status: w.Code, header: w.Header()}
	if w.Code == http.StatusOK {
		_ = json.Unmarshal(w.Body.Bytes(), &res.principal)
	} else if err := json.Unmarshal(w.Body.Bytes(), &res.body); err != nil {
		t.Fatalf("error body is not JSON: %s", w.Body.String())
	}
	return res
}

type staticSource struct{}

func (staticSource) Current() *settings.Snapshot { return settings.Empty() }

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }
