package auth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// consoleDo sends one request through RequireConsole, whose handler answers the principal.
func (f *fixture) consoleDo(t *testing.T, r *http.Request) (int, Principal, string) {
	t.Helper()
	h := f.auth.RequireConsole(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := FromContext(r.Context())
		_ = json.NewEncoder(w).Encode(p)
	}), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "login", http.StatusUnauthorized) }))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var p Principal
	if w.Code == http.StatusOK {
		_ = json.Unmarshal(w.Body.Bytes(), &p)
	}
	return w.Code, p, w.Body.String()
}

func consoleRequest(method, path, authorization, cookie string, hdr ...string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	if cookie != "" {
		r.AddCookie(&http.Cookie{Name: ConsoleCookie, Value: cookie})
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	return r
}

func TestConsoleAdmitsOnlyTheOperator(t *testing.T) {
	f := newFixture(t, true, twoTenants)
	session, expires, ok := f.auth.ConsoleLogin(f.operator, time.Hour)
	if !ok || !expires.Equal(f.now.Add(time.Hour)) {
		t.Fatalf("login with the operator key: ok %t, expires %v", ok, expires)
	}
	f.secrets = append(f.secrets, session)
	if _, _, ok := f.auth.ConsoleLogin(f.keys["admin"].Token, time.Hour); ok {
		t.Fatal("a tenant admin key logged in to the console")
	}
	for _, tc := range []struct {
		name          string
		req           *http.Request
		status        int
		operator      bool
		tenant        string
		refusedReason string
	}{
		{name: "no credential", req: consoleRequest("GET", "/console/api/stats", "", ""), status: 401},
		{name: "tenant admin key", req: consoleRequest("GET", "/console/api/stats", "Bearer "+f.keys["admin"].Token, ""), status: 403},
		{name: "wrong bearer", req: consoleRequest("GET", "/console/api/stats", "Bearer "+strings.Repeat("x", 40), ""), status: 403},
		{name: "tampered cookie", req: consoleRequest("GET", "/console/api/stats", "", session[:len(session)-1]+"0"), status: 401},
		{name: "forged expiry", req: consoleRequest("GET", "/console/api/stats", "", "99999999999"+session[strings.Index(session, "."):]), status: 401},
		{name: "operator bearer", req: consoleRequest("GET", "/console/api/stats", "Bearer "+f.operator, ""), status: 200, operator: true},
		{name: "cookie", req: consoleRequest("GET", "/console/api/dlq?tenant=acme", "", session), status: 200, operator: true, tenant: "acme"},
		{name: "unknown tenant", req: consoleRequest("GET", "/console/api/dlq?tenant=nope", "", session), status: 400},
		{name: "cookie without csrf header", req: consoleRequest("DELETE", "/console/api/dlq/events?tenant=acme", "", session), status: 403},
		{name: "cookie with csrf header", req: consoleRequest("DELETE", "/console/api/dlq/events?tenant=acme", "", session, ConsoleCSRFHeader, "1"), status: 200, operator: true, tenant: "acme"},
		{name: "bearer without csrf header", req: consoleRequest("DELETE", "/console/api/dlq/events?tenant=acme", "Bearer "+f.operator, ""), status: 200, operator: true, tenant: "acme"},
	} {
		status, p, body := f.consoleDo(t, tc.req)
		if status != tc.status || p.Operator != tc.operator || p.Tenant != tc.tenant {
			t.Errorf("%s: %d %+v (%s), want %d operator %t tenant %q", tc.name, status, p, body, tc.status, tc.operator, tc.tenant)
		}
	}

	// The session ends when it expires and when the operator key changes.
	f.now = f.now.Add(time.Hour)
	if status, _, _ := f.consoleDo(t, consoleRequest("GET", "/console/api/stats", "", session)); status != 401 {
		t.Errorf("expired session: %d, want 401", status)
	}
	f.now = f.now.Add(-time.Hour)
	if status, _, _ := f.consoleDo(t, consoleRequest("GET", "/console/api/stats", "", session)); status != 200 {
		t.Fatalf("session before expiry: %d, want 200", status)
	}
	rotated := "op-" + strings.Repeat("r0tat3d", 8)
	f.secrets = append(f.secrets, rotated)
	if err := os.WriteFile(f.auth.cfg.OperatorKeyFile, []byte(rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.auth.ReloadOperatorKey(); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := f.consoleDo(t, consoleRequest("GET", "/console/api/stats", "", session)); status != 401 {
		t.Errorf("session after the operator key rotated: %d, want 401", status)
	}
}

func TestConsoleDisabledWithoutOperatorKey(t *testing.T) {
	a, err := New(Config{}, Deps{Settings: staticSource{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := a.ConsoleLogin("", time.Hour); ok {
		t.Fatal("login without an operator key succeeded")
	}
	f := &fixture{auth: a}
	if status, _, body := f.consoleDo(t, consoleRequest("GET", "/console/api/stats", "", "")); status != 404 || !strings.Contains(body, "auth.console_disabled") {
		t.Fatalf("console without an operator key: %d %s, want 404 auth.console_disabled", status, body)
	}
}
