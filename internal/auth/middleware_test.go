package auth

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"net/http"
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
		if rule.OperatorOnly {
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

// TestAnonymousNeverOperator: without Config.AnonymousOps (any listener but loopback) the
// anonymous principal is refused on every /v1/ops/* route, operator SQL included, while ingest
// and query still admit it.
func TestAnonymousNeverOperator(t *testing.T) {
	f := newFixture(t, true, func(*fixture) map[string]string { return map[string]string{"default": "database: default\n"} })
	n := 0
	for pattern := range Routes() {
		method, path, _ := strings.Cut(pattern, " ")
		if !strings.HasPrefix(path, opsPrefix) {
			continue
		}
		n++
		path = strings.NewReplacer("{table}", "events").Replace(path)
		res := f.do(t, method, path+"?tenant=default", "")
		if res.status != http.StatusForbidden || res.body["code"] != "auth.anonymous_ops" {
			t.Errorf("anonymous %s %s: %d %v, want 403 auth.anonymous_ops", method, path, res.status, res.body)
		}
	}
	if n < 5 {
		t.Fatalf("only %d ops routes checked", n)
	}
	if res := f.do(t, "POST", "/v1/query", ""); res.status != http.StatusOK || !res.principal.Anonymous {
		t.Fatalf("anonymous query: %d %+v", res.status, res.principal)
	}
}
