package auth

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScopeRouteMatrix checks every route against a key holding each single scope, the
// all-scopes key and the operator key.
func TestScopeRouteMatrix(t *testing.T) {
	f := newFixture(t, false, twoTenants)
	for pattern, rule := range Routes() {
		if rule.ClickHouse || rule.Public {
			continue // TestClickHouseRoutes
		}
		method, path := requestFor(pattern)
		for _, label := range []string{"ingest", "query", "stream", "admin", "all"} {
			t.Run(pattern+"/"+label, func(t *testing.T) {
				res := f.do(t, method, path, f.keys[label].Token)
				has := label == "all" || label == string(rule.Scope)
				switch {
				case rule.OperatorOnly:
					if res.status != http.StatusForbidden || res.body["code"] != "auth.operator_only" {
						t.Fatalf("status %d body %v, want 403 auth.operator_only", res.status, res.body)
					}
				case has:
					if res.status != http.StatusOK || res.principal.Tenant != "acme" || res.principal.KeyID != f.keys[label].ID {
						t.Fatalf("status %d principal %+v body %v, want 200 as acme", res.status, res.principal, res.body)
					}
				default:
					if res.status != http.StatusForbidden || res.body["code"] != "auth.missing_scope" ||
						!strings.Contains(res.body["error"].(string), string(rule.Scope)) {
						t.Fatalf("status %d body %v, want 403 naming scope %q", res.status, res.body, rule.Scope)
					}
					if d, _ := res.body["details"].(map[string]any); d["missing_scope"] != string(rule.Scope) {
						t.Fatalf("details %v do not name the missing scope", res.body["details"])
					}
				}
			})
		}
		t.Run(pattern+"/operator", func(t *testing.T) {
			res := f.do(t, method, path+"?tenant=globex", f.operator)
			switch {
			case !rule.Ops:
				if res.status != http.StatusForbidden || res.body["code"] != "auth.operator_key_not_allowed" {
					t.Fatalf("status %d body %v, want 403", res.status, res.body)
				}
			case rule.OperatorOnly:
				if res.status != http.StatusOK || !res.principal.Operator {
					t.Fatalf("status %d principal %+v", res.status, res.principal)
				}
			default:
				if res.status != http.StatusOK || !res.principal.Operator || res.principal.Tenant != "globex" {
					t.Fatalf("status %d principal %+v, want operator on globex", res.status, res.principal)
				}
			}
		})
	}
}

// TestTenantComesFromKey: no header, query parameter or path can move a tenant key to another
// tenant.
func TestTenantComesFromKey(t *testing.T) {
	f := newFixture(t, false, twoTenants)
	for pattern, rule := range Routes() {
		if rule.OperatorOnly || rule.Public {
			continue
		}
		method, path := requestFor(pattern)
		for label, tenant := range map[string]string{"all": "acme", "globex": "globex"} {
			res := f.do(t, method, path+"?tenant=other", f.keys[label].Token, "X-Tenant", "other", "X-WaveHouse-Tenant", "other")
			if res.status != http.StatusOK || res.principal.Tenant != tenant {
				t.Errorf("%s with %s key: status %d tenant %q, want %q", pattern, label, res.status, res.principal.Tenant, tenant)
			}
		}
	}
}

func TestTableRestriction(t *testing.T) {
	f := newFixture(t, false, twoTenants)
	tok := f.keys["tables"].Token
	for pattern, rule := range Routes() {
		if rule.TableParam == "" {
			continue
		}
		method, path := requestFor(pattern) // table "events" is not in [pages]
		if res := f.do(t, method, path, tok); res.status != http.StatusForbidden || res.body["code"] != "auth.table_not_allowed" {
			t.Errorf("%s on events: status %d body %v, want 403 auth.table_not_allowed", pattern, res.status, res.body)
		}
		path = strings.Replace(path, "events", "pages", 1)
		res := f.do(t, method, path, tok)
		if res.status != http.StatusOK || !slices.Equal(res.principal.Tables, []string{"pages"}) {
			t.Errorf("%s on pages: status %d principal %+v", pattern, res.status, res.principal)
		}
	}
	p := Principal{Tables: []string{"pages"}}
	if !p.AllowsTable("pages") || p.AllowsTable("events") || !(Principal{}).AllowsTable("events") {
		t.Fatal("AllowsTable")
	}
}

func TestAuthenticationFailures(t *testing.T) {
	f := newFixture(t, false, twoTenants)
	valid := f.keys["all"]
	id, secret, _ := ParseToken(valid.Token)
	wrong := "wh_" + id + "_" + secret[:len(secret)-1] + string("0123456789abcdef"[(strings.IndexByte("0123456789abcdef", secret[len(secret)-1])+1)%16])
	f.secrets = append(f.secrets, wrong)
	cases := []struct {
		name, header, code string
	}{
		{"missing", "", "auth.missing_key"},
		{"basic scheme", "Basic dXNlcjpwYXNz", "auth.missing_key"},
		{"empty bearer", "Bearer ", "auth.missing_key"},
		{"garbage", "Bearer nonsense", "auth.invalid_key"},
		{"unknown id", "Bearer wh_ffffffffffff_" + secret, "auth.invalid_key"},
		{"wrong secret", "Bearer " + wrong, "auth.invalid_key"},
		{"secret prefix", "Bearer " + valid.Token[:len(valid.Token)-1], "auth.invalid_key"},
		{"expired", "Bearer " + f.keys["expired"].Token, "auth.expired_key"},
		{"operator key prefix", "Bearer " + f.operator[:len(f.operator)-1], "auth.invalid_key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.doRaw(t, requestHeader(c.header))
			if r.status != http.StatusUnauthorized || r.body["code"] != c.code || r.header.Get("WWW-Authenticate") == "" {
				t.Fatalf("status %d body %v, want 401 %s with WWW-Authenticate", r.status, r.body, c.code)
			}
		})
	}
	out := f.log.String()
	if n := counterValue(f.auth.denied.WithLabelValues("auth.invalid_key")) + counterValue(f.auth.denied.WithLabelValues("auth.missing_key")) +
		counterValue(f.auth.denied.WithLabelValues("auth.expired_key")); n != float64(len(cases)) {
		t.Fatalf("wavehouse_auth_denied_total counts %v refusals, want %d", n, len(cases))
	}
	if strings.Count(out, "audit: authentication failed") != len(cases) {
		t.Fatalf("want one audit line per failure:\n%s", out)
	}
	if !strings.Contains(out, `"key_id":"`+f.keys["expired"].ID+`"`) {
		t.Fatalf("audit line lacks the key id of the expired key:\n%s", out)
	}
	// "Bearer" with valid key works and is case-insensitive.
	if res := f.doRaw(t, requestHeader("bearer "+valid.Token)); res.status != http.StatusOK {
		t.Fatalf("lower-case bearer: %d", res.status)
	}
}

func TestExpiryFollowsClock(t *testing.T) {
	f := newFixture(t, false, twoTenants)
	tok := f.keys["expiring"].Token // expires 13:00, clock at 12:00
	if res := f.do(t, "POST", "/v1/ingest/events", tok); res.status != http.StatusOK {
		t.Fatalf("before expiry: %d", res.status)
	}
	f.now = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	if res := f.do(t, "POST", "/v1/ingest/events", tok); res.status != http.StatusUnauthorized || res.body["code"] != "auth.expired_key" {
		t.Fatalf("at expiry: %d %v", res.status, res.body)
	}
}

func TestRevokeAndAddTakeEffectOnReload(t *testing.T) {
	f := newFixture(t, false, twoTenants)
	old := f.keys["globex"]
	if res := f.do(t, "POST", "/v1/query", old.Token); res.status != http.StatusOK {
		t.Fatalf("before: %d", res.status)
	}
	fresh := f.keyFor("fresh")
	writeTenant(t, f.dir, "globex", "database: globex\nkeys:\n  - {id: "+fresh.ID+", hash: "+fresh.Hash+", scopes: [query]}\n")
	if _, err := f.mgr.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if res := f.do(t, "POST", "/v1/query", old.Token); res.status != http.StatusUnauthorized || res.body["code"] != "auth.invalid_key" {
		t.Fatalf("revoked key: %d %v", res.status, res.body)
	}
	if res := f.do(t, "POST", "/v1/query", fresh.Token); res.status != http.StatusOK || res.principal.Tenant != "globex" {
		t.Fatalf("added key: %d %+v", res.status, res.principal)
	}
	// A scope change applies too.
	writeTenant(t, f.dir, "globex", "database: globex\nkeys:\n  - {id: "+fresh.ID+", hash: "+fresh.Hash+", scopes: [ingest]}\n")
	if _, err := f.mgr.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if res := f.do(t, "POST", "/v1/query", fresh.Token); res.status != http.StatusForbidden {
		t.Fatalf("scope removed: %d", res.status)
	}
}

func TestOperatorRoutes(t *testing.T) {
	f := newFixture(t, false, twoTenants)
	if res := f.do(t, "GET", "/v1/ops/dlq", f.operator); res.status != http.StatusBadRequest || res.body["code"] != "auth.tenant_required" {
		t.Fatalf("no tenant: %d %v", res.status, res.body)
	}
	if res := f.do(t, "GET", "/v1/ops/dlq?tenant=nope", f.operator); res.status != http.StatusBadRequest || res.body["code"] != "auth.unknown_tenant" {
		t.Fatalf("unknown tenant: %d %v", res.status, res.body)
	}
	if !strings.Contains(f.log.String(), "audit: access denied") {
		t.Fatal("no audit line for denied ops access")
	}
	if res := f.do(t, "GET", "/v1/ops/dlq?tenant=acme", f.operator); res.status != http.StatusOK {
		t.Fatalf("operator: %d", res.status)
	}
	if !strings.Contains(f.log.String(), "audit: ops request") {
		t.Fatal("no audit line for an ops request")
	}
	// A tenant admin key reaches only its own tenant's ops routes, whatever ?tenant= says.
	if res := f.do(t, "GET", "/v1/ops/dlq?tenant=globex", f.keys["admin"].Token); res.status != http.StatusOK || res.principal.Tenant != "acme" {
		t.Fatalf("admin key: %d %+v", res.status, res.principal)
	}
	// Unlisted ops routes default to the admin rule.
	if r, ok := RuleFor("GET /v1/ops/new-thing"); !ok || r.Scope != ScopeAdmin || !r.Ops {
		t.Fatalf("RuleFor default = %+v %v", r, ok)
	}
	if _, ok := RuleFor("GET /v1/unknown"); ok {
		t.Fatal("unknown non-ops route has a rule")
	}
	if err := f.auth.Handle(http.NewServeMux(), "GET /v1/unknown", http.NotFoundHandler()); err == nil {
		t.Fatal("Handle accepted a route without a rule")
	}
}

func TestAnonymous(t *testing.T) {
	noKeys := func(*fixture) map[string]string { return map[string]string{"default": "database: default\n"} }
	f := newFixture(t, true, noKeys)
	res := f.do(t, "POST", "/v1/ingest/events", "")
	if res.status != http.StatusOK || !res.principal.Anonymous || res.principal.Tenant != DefaultAnonymousTenant {
		t.Fatalf("anonymous: %d %+v", res.status, res.principal)
	}
	// Adding a key ends anonymous access without a restart.
	k := f.keyFor("first")
	writeTenant(t, f.dir, "default", "database: default\nkeys:\n  - {id: "+k.ID+", hash: "+k.Hash+", scopes: [ingest]}\n")
	if _, err := f.mgr.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if res := f.do(t, "POST", "/v1/ingest/events", ""); res.status != http.StatusUnauthorized {
		t.Fatalf("anonymous after a key was added: %d", res.status)
	}
	// Without AllowAnonymous, no keys means no access at all.
	g := newFixture(t, false, noKeys)
	if res := g.do(t, "POST", "/v1/ingest/events", ""); res.status != http.StatusUnauthorized {
		t.Fatalf("anonymous not allowed: %d", res.status)
	}
}

func TestOperatorKeyFile(t *testing.T) {
	src := staticSource{}
	if _, err := New(Config{OperatorKeyFile: "/nonexistent/op.key"}, Deps{Settings: src}); err == nil || !strings.Contains(err.Error(), "operator_key_file") {
		t.Fatalf("missing file: %v", err)
	}
	short := t.TempDir() + "/short"
	_ = writeFile(short, "tooshort")
	_, err := New(Config{OperatorKeyFile: short}, Deps{Settings: src})
	if err == nil || strings.Contains(err.Error(), "tooshort") {
		t.Fatalf("short key: %v (must not quote the key)", err)
	}
	if _, err := New(Config{AnonymousTenant: "Bad-Name"}, Deps{Settings: src}); err == nil || !strings.Contains(err.Error(), "AnonymousTenant") {
		t.Fatalf("bad anonymous tenant: %v", err)
	}
	if _, err := New(Config{}, Deps{}); err == nil {
		t.Fatal("missing settings accepted")
	}
}

func TestCheckListener(t *testing.T) {
	cases := []struct {
		listen     string
		keys       int
		allow      bool
		anon, warn bool
		wantErr    bool
	}{
		{"127.0.0.1:8080", 0, false, true, false, false},
		{"localhost:8080", 0, false, true, false, false},
		{"[::1]:8080", 0, false, true, false, false},
		{":8080", 0, false, false, false, true},
		{"0.0.0.0:8080", 0, false, false, false, true},
		{"10.1.2.3:8080", 0, false, false, false, true},
		{"0.0.0.0:8080", 0, true, true, true, false},
		{"0.0.0.0:8080", 3, false, false, false, false},
		{"0.0.0.0:8080", 3, true, true, false, false},
	}
	for _, c := range cases {
		anon, warn, err := CheckListener(c.listen, c.keys, c.allow)
		if anon != c.anon || (warn != "") != c.warn || (err != nil) != c.wantErr {
			t.Errorf("CheckListener(%q, %d, %v) = %v, %q, %v", c.listen, c.keys, c.allow, anon, warn, err)
		}
		if err != nil && !strings.Contains(err.Error(), "auth.allow_anonymous") {
			t.Errorf("error does not say what to change: %v", err)
		}
	}
}

// counterValue reads a counter's current value.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// TestAnonymousNeverOperator: the anonymous principal (a loopback listener, or any listener with
// auth.allow_anonymous; both are Config.AllowAnonymous) is refused 401 auth.anonymous_ops on
// every /v1/ops/* route, operator SQL included, with an answer naming how to send the operator
// key, while ingest and query still admit it; without anonymous access a request without a
// credential gets 401 auth.missing_key with the same hint. The operator key gets through.
func TestAnonymousNeverOperator(t *testing.T) {
	noKeys := func(*fixture) map[string]string { return map[string]string{"default": "database: default\n"} }
	for _, anonymous := range []bool{true, false} {
		f := newFixture(t, anonymous, noKeys)
		want := "auth.missing_key"
		if anonymous {
			want = "auth.anonymous_ops"
		}
		n := 0
		for pattern := range Routes() {
			method, path, _ := strings.Cut(pattern, " ")
			if !strings.HasPrefix(path, opsPrefix) {
				continue
			}
			n++
			path = strings.NewReplacer("{table}", "events").Replace(path) + "?tenant=default"
			res := f.do(t, method, path, "")
			msg, _ := res.body["error"].(string)
			if res.status != http.StatusUnauthorized || res.body["code"] != want || !strings.Contains(msg, "auth.operator_key_file") ||
				!strings.Contains(msg, "data/operator.key") || strings.ContainsAny(msg, "<>") || res.header.Get("WWW-Authenticate") == "" {
				t.Errorf("anonymous %v: %s %s: %d %v %v, want 401 %s naming how to send the operator key", anonymous, method, path, res.status, res.header, res.body, want)
			}
			if res := f.do(t, method, path, f.operator); res.status != http.StatusOK || !res.principal.Operator {
				t.Errorf("operator %s %s: %d %v", method, path, res.status, res.body)
			}
		}
		if n < 5 {
			t.Fatalf("only %d ops routes checked", n)
		}
		if res := f.do(t, "POST", "/v1/query", ""); anonymous && (res.status != http.StatusOK || !res.principal.Anonymous) {
			t.Fatalf("anonymous query: %d %+v", res.status, res.principal)
		}
	}
}

// TestEnsureOperatorKeyFile: the generated key is random, long enough for New, mode 0600 in a
// directory created 0700, and left as it is on the following boots.
func TestEnsureOperatorKeyFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := GeneratedOperatorKeyFile(dir)
	if filepath.Base(path) != "operator.key" || filepath.Dir(path) != dir {
		t.Fatalf("GeneratedOperatorKeyFile(%q) = %q", dir, path)
	}
	created, err := EnsureOperatorKeyFile(path)
	if err != nil || !created {
		t.Fatalf("first EnsureOperatorKeyFile: %v %v", created, err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", p, st.Mode(), err, want)
		}
	}
	first, _ := os.ReadFile(path)
	if key := strings.TrimSpace(string(first)); len(key) < minOperatorKeyLen {
		t.Fatalf("generated key has %d characters, want ≥ %d", len(key), minOperatorKeyLen)
	}
	if created, err := EnsureOperatorKeyFile(path); err != nil || created {
		t.Fatalf("second EnsureOperatorKeyFile: %v %v, want the file kept", created, err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(first) {
		t.Fatal("the second call replaced the key")
	}
	other := GeneratedOperatorKeyFile(t.TempDir())
	if _, err := EnsureOperatorKeyFile(other); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(other); string(b) == string(first) {
		t.Fatal("two generated keys are equal")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("data dir holds %d entries, want only operator.key (no temporary file left)", len(entries))
	}
	a, err := New(Config{OperatorKeyFile: path}, Deps{Settings: staticSource{}})
	if err != nil || a.operator.Load() == nil {
		t.Fatalf("New with the generated key: %v", err)
	}
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureOperatorKeyFile(GeneratedOperatorKeyFile(notDir)); err == nil || !strings.Contains(err.Error(), "operator.key") {
		t.Errorf("data_dir is a file: %v, want an error naming the file", err)
	}
}
