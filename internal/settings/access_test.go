package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCORSAllowsOrigin(t *testing.T) {
	c := &CORS{Origins: []string{"https://app.example.com", "https://*.example.com", "http://localhost:3000"}}
	for origin, want := range map[string]bool{
		"https://app.example.com":           true,
		"HTTPS://APP.EXAMPLE.COM":           true,
		"https://a.b.example.com":           true,
		"https://example.com":               false, // a wildcard never matches the bare domain
		"http://a.example.com":              false, // nor another scheme
		"https://a.example.com:8443":        false, // nor another port
		"https://evil.test/x.example.com":   false,
		"https://evil.test?.example.com":    false,
		"https://user@x.example.com":        false,
		"https://.example.com":              false,
		"https://evilexample.com":           false,
		"http://localhost:3000":             true,
		"http://localhost:3001":             false,
		"https://app.example.com.evil.test": false,
		"null":                              false,
	} {
		if got := c.AllowsOrigin(origin); got != want {
			t.Errorf("AllowsOrigin(%q) = %t, want %t", origin, got, want)
		}
	}
	var none *CORS
	if none.AllowsOrigin("https://app.example.com") {
		t.Error("a tenant without cors allows an origin")
	}
}

func TestAccessSettings(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "hs")
	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(secret, []byte(strings.Repeat("s", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte("tooshort-secret-value"), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		if err := os.MkdirAll(filepath.Join(dir, "tenants"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tenants", name+".yaml"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a", "database: a\njwt: {issuer: https://idp/, audience: wh, secret_files: ["+secret+"], roles: {viewer: {scopes: [query]}}}\n"+
		"cors: {origins: [\"https://*.a.test\"], methods: [get, post, delete], max_age: 5m}\n")
	write("b", "database: b\ncors: {origins: [\"https://app.a.test\"], headers: [X-Custom], max_age: 1h}\n")
	snap, err := Load(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := snap.Tenant("a")
	if a.JWT.Leeway != DefaultJWTLeeway || a.JWT.RoleClaim != "role" || len(a.JWT.Secrets) != 1 || string(a.JWT.Secrets[0]) != strings.Repeat("s", 32) {
		t.Errorf("jwt defaults: %+v", a.JWT)
	}
	if tn, ok := snap.TenantByIssuer("https://idp/"); !ok || tn.Name != "a" || snap.Credentials() != 1 {
		t.Errorf("TenantByIssuer: %v %v, credentials %d", tn, ok, snap.Credentials())
	}
	// The preflight union: both tenants allow app.a.test; only a allows eu.a.test.
	u, ok := snap.CORSFor("https://app.a.test")
	if !ok || strings.Join(u.Methods, ",") != "GET,POST,DELETE" || !strings.Contains(strings.Join(u.Headers, ","), "X-Custom") || u.MaxAge != 5*time.Minute {
		t.Errorf("CORSFor(app.a.test) = %+v %t: want the union of methods and headers and the shorter max age", u, ok)
	}
	if u, ok := snap.CORSFor("https://eu.a.test"); !ok || u.MaxAge != 5*time.Minute || strings.Contains(strings.Join(u.Headers, ","), "X-Custom") {
		t.Errorf("CORSFor(eu.a.test) = %+v %t: want a's policy only", u, ok)
	}
	if _, ok := snap.CORSFor("https://b.test"); ok {
		t.Error("CORSFor(b.test) allowed an origin no tenant lists")
	}

	write("b", "database: b\njwt: {issuer: https://idp/, audience: wh, secret_files: ["+short+"], leeway: 1h, jwks_url: ftp://x, jwks_file: /nonexistent,"+
		" roles: {boss: {scopes: [admin]}, x: {scopes: [write], tables: [\"bad name\"]}}}\ncors: {origins: [\"*\", \"https://a.test/path\", \"https://x*.a.test\"], max_age: 48h}\n")
	_, err = Load(dir, time.Now())
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	for _, want := range []string{"issuer \"https://idp/\" is also used by tenant \"a\"", "must be at least 32 characters", "jwt.leeway", "jwt.jwks_url",
		"give jwks_url or jwks_file, not both", "admin is for API keys", "unknown scope \"write\"", "\"bad name\" is not a table name",
		"* alone is not allowed", "\"https://a.test/path\": want scheme://host[:port]", "\"https://x*.a.test\": a wildcard must be", "cors.max_age"} {
		if !strings.Contains(msg, want) {
			t.Errorf("findings lack %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "tooshort-secret-value") {
		t.Errorf("a finding quotes a secret:\n%s", msg)
	}
	write("b", "database: b\njwt: {roles: {}}\ncors: {}\n")
	_, err = Load(dir, time.Now())
	for _, want := range []string{"jwt.issuer", "jwt.audience", "give secret_files (HS256), jwks_url or jwks_file", "jwt.roles", "cors.origins"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("findings lack %q: %v", want, err)
		}
	}
}

func TestRolePolicies(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "hs")
	if err := os.WriteFile(secret, []byte(strings.Repeat("s", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(roles string) error {
		if err := os.MkdirAll(filepath.Join(dir, "tenants"), 0o755); err != nil {
			t.Fatal(err)
		}
		body := "database: a\njwt:\n  issuer: https://idp/\n  audience: wh\n  secret_files: [" + secret + "]\n  roles:\n" + roles
		if err := os.WriteFile(filepath.Join(dir, "tenants", "a.yaml"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir, time.Now())
		return err
	}
	ok := `    c:
      scopes: [query, ingest]
      tables: [orders]
      max_rows: 10
      max_execution_time: 2s
      policies:
        orders: {deny_columns: [secret], filter: "owner = {claim:sub}", set: {owner: "{claim:sub}"}}
`
	if err := write(ok); err != nil {
		t.Fatal(err)
	}
	snap, _ := Load(dir, time.Now())
	a, _ := snap.Tenant("a")
	r := a.JWT.Roles["c"]
	if p := r.Policies["orders"]; r.MaxRows != 10 || r.MaxExecutionTime != 2*time.Second || p == nil || p.Set["owner"] != "sub" ||
		p.Filter.String() != "owner = {claim:sub}" || len(p.DenyColumns) != 1 {
		t.Errorf("role c: %+v", r)
	}
	bad := `    c:
      scopes: [query]
      max_rows: -1
      max_execution_time: soon
      policies:
        orders: {columns: [id], deny_columns: [secret], filter: "owner = ", set: {owner: sub, "bad col": "{claim:x}"}}
`
	err := write(bad)
	for _, want := range []string{"roles.c.policies.orders: orders is not one of roles.c.tables", "not both", "policies.orders.filter",
		"set.owner: \"sub\": want {claim:name}", "\"bad col\" is not a column name", "max_rows", "max_execution_time"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("findings lack %q: %v", want, err)
		}
	}
}
