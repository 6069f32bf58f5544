package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/wavehouse/wavehouse/internal/testutil/jwttest"
)

// jwtKeys are the signing keys of the JWT tests.
type jwtKeys struct {
	acmeHS, globexHS, strayHS []byte
	rsa1, rsa2                *rsa.PrivateKey
	ec                        *ecdsa.PrivateKey
	jwks                      *jwttest.JWKS
}

func newJWTFixture(t *testing.T) (*fixture, *jwtKeys) {
	t.Helper()
	k := &jwtKeys{acmeHS: []byte(strings.Repeat("a", 40)), globexHS: []byte(strings.Repeat("g", 40)), strayHS: []byte(strings.Repeat("x", 40)), jwks: jwttest.NewJWKS(t)}
	var err error
	if k.rsa1, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.rsa2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	k.jwks.Serve(t, map[string]any{"r1": &k.rsa1.PublicKey, "e1": &k.ec.PublicKey})
	secrets := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(secrets, name)
		if err := writeFile(p, string(b)+"\n"); err != nil {
			t.Fatal(err)
		}
		return p
	}
	acme, globex := write("acme", k.acmeHS), write("globex", k.globexHS)
	f := newFixture(t, false, func(f *fixture) map[string]string {
		f.secrets = append(f.secrets, string(k.acmeHS), string(k.globexHS))
		return map[string]string{
			"acme": fmt.Sprintf(`database: acme
jwt:
  issuer: https://idp.acme.test/
  audience: wavehouse
  leeway: 30s
  role_claim: https://acme.test/role
  secret_files: [%s]
  jwks_url: %s
  jwks_refresh: 1m
  jwks_min_interval: 10s
  roles:
    viewer: {scopes: [query, stream], tables: [events]}
    writer: {scopes: [ingest]}
cors:
  origins: [https://app.acme.test, "https://*.acme.test"]
`, acme, k.jwks.URL),
			"globex": fmt.Sprintf(`database: globex
jwt: {issuer: https://idp.globex.test/, audience: wavehouse, secret_files: [%s], roles: {viewer: {scopes: [query]}}}
`, globex),
		}
	})
	return f, k
}

// claims are a valid acme viewer token's claims at the fixture's clock, changed by edit.
func (f *fixture) claims(edit func(jwt.MapClaims)) jwt.MapClaims {
	c := jwt.MapClaims{"iss": "https://idp.acme.test/", "aud": "wavehouse", "sub": "user-7", "https://acme.test/role": "viewer",
		"exp": f.now.Add(time.Hour).Unix(), "nbf": f.now.Add(-time.Minute).Unix()}
	if edit != nil {
		edit(c)
	}
	return c
}

func sign(t *testing.T, m jwt.SigningMethod, kid string, key any, c jwt.MapClaims) string {
	return jwttest.Sign(t, m, kid, key, c)
}

// TestJWTCredentials checks each kind of token against the documented status and code, and
// that a token acts only as the tenant whose key verified it with its role's scopes and tables.
func TestJWTCredentials(t *testing.T) {
	f, k := newJWTFixture(t)
	hs := func(key []byte, edit func(jwt.MapClaims)) string {
		return sign(t, jwt.SigningMethodHS256, "", key, f.claims(edit))
	}
	unsigned, _ := jwt.NewWithClaims(jwt.SigningMethodNone, f.claims(nil)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	for _, c := range []struct {
		name, token string
		status      int
		code        string
	}{
		{"no token", "", 401, "auth.missing_key"},
		{"valid HS256", hs(k.acmeHS, nil), 200, ""},
		{"valid RS256 from the JWKS", sign(t, jwt.SigningMethodRS256, "r1", k.rsa1, f.claims(nil)), 200, ""},
		{"valid ES256 from the JWKS", sign(t, jwt.SigningMethodES256, "e1", k.ec, f.claims(nil)), 200, ""},
		{"RS256 without kid tries the set", sign(t, jwt.SigningMethodRS256, "", k.rsa1, f.claims(nil)), 200, ""},
		{"expired", hs(k.acmeHS, func(c jwt.MapClaims) { c["exp"] = f.now.Add(-time.Minute).Unix() }), 401, "auth.expired_token"},
		{"expired within the leeway", hs(k.acmeHS, func(c jwt.MapClaims) { c["exp"] = f.now.Add(-10 * time.Second).Unix() }), 200, ""},
		{"no exp", hs(k.acmeHS, func(c jwt.MapClaims) { delete(c, "exp") }), 401, "auth.invalid_token"},
		{"not yet valid", hs(k.acmeHS, func(c jwt.MapClaims) { c["nbf"] = f.now.Add(time.Minute).Unix() }), 401, "auth.invalid_token"},
		{"wrong audience", hs(k.acmeHS, func(c jwt.MapClaims) { c["aud"] = "other" }), 401, "auth.invalid_token"},
		{"unknown issuer", hs(k.acmeHS, func(c jwt.MapClaims) { c["iss"] = "https://evil.test/" }), 401, "auth.invalid_token"},
		{"wrong key", hs(k.strayHS, nil), 401, "auth.invalid_token"},
		{"other tenant's key", hs(k.globexHS, nil), 401, "auth.invalid_token"},
		{"RS256 by a key not in the JWKS", sign(t, jwt.SigningMethodRS256, "r1", k.rsa2, f.claims(nil)), 401, "auth.invalid_token"},
		{"alg none", unsigned, 401, "auth.invalid_token"},
		{"expired and wrong key", hs(k.strayHS, func(c jwt.MapClaims) { c["exp"] = f.now.Add(-time.Hour).Unix() }), 401, "auth.invalid_token"},
		{"unknown role", hs(k.acmeHS, func(c jwt.MapClaims) { c["https://acme.test/role"] = "root" }), 403, "auth.role_not_allowed"},
		{"role in another claim", hs(k.acmeHS, func(c jwt.MapClaims) { delete(c, "https://acme.test/role"); c["role"] = "viewer" }), 403, "auth.role_not_allowed"},
	} {
		r := f.do(t, "POST", "/v1/query", c.token)
		if r.status != c.status || (c.code != "" && r.body["code"] != c.code) {
			t.Errorf("%s: got %d %v, want %d %s", c.name, r.status, r.body, c.status, c.code)
			continue
		}
		if c.status == 200 && (r.principal.Tenant != "acme" || r.principal.Subject != "user-7" || r.principal.Role != "viewer" || !r.principal.AllowsTable("events") || r.principal.AllowsTable("pages")) {
			t.Errorf("%s: principal %+v, want tenant acme, subject user-7, role viewer, tables [events]", c.name, r.principal)
		}
		if c.status == 401 && r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", c.name)
		}
	}
	// The globex token acts as globex, whatever else it claims.
	g := f.do(t, "POST", "/v1/query", sign(t, jwt.SigningMethodHS256, "", k.globexHS, f.claims(func(c jwt.MapClaims) {
		c["iss"], c["role"], c["tenant"] = "https://idp.globex.test/", "viewer", "acme"
	})))
	if g.status != 200 || g.principal.Tenant != "globex" {
		t.Errorf("globex token: got %d tenant %q, want 200 globex", g.status, g.principal.Tenant)
	}
	// The role's scopes are the existing authorization: a viewer may not ingest.
	if r := f.do(t, "POST", "/v1/ingest/events", hs(k.acmeHS, nil)); r.status != 403 || r.body["code"] != "auth.missing_scope" {
		t.Errorf("viewer token on ingest: got %d %v, want 403 auth.missing_scope", r.status, r.body)
	}
	if r := f.do(t, "GET", "/v1/stream/pages", hs(k.acmeHS, nil)); r.status != 403 || r.body["code"] != "auth.table_not_allowed" {
		t.Errorf("viewer token on another table: got %d %v, want 403 auth.table_not_allowed", r.status, r.body)
	}
}

// TestJWTQueryToken checks ?token= (for EventSource): accepted on the stream route only, for
// JWTs only, and removed from the URL before the handler (and any log) sees it.
func TestJWTQueryToken(t *testing.T) {
	f, k := newJWTFixture(t)
	tok := sign(t, jwt.SigningMethodHS256, "", k.acmeHS, f.claims(nil))
	r := httptest.NewRequest("GET", "/v1/stream/events?since=0&token="+tok, nil)
	if res := f.doRaw(t, r); res.status != 200 || res.principal.Tenant != "acme" {
		t.Fatalf("stream with ?token=: got %d %v", res.status, res.body)
	}
	if strings.Contains(r.URL.String(), tok) || r.URL.Query().Get("since") != "0" {
		t.Errorf("after auth the URL is %q: want the token removed and since=0 kept", r.URL)
	}
	if res := f.doRaw(t, httptest.NewRequest("POST", "/v1/query?token="+tok, nil)); res.status != 401 || res.body["code"] != "auth.missing_key" {
		t.Errorf("?token= on /v1/query: got %d %v, want 401 auth.missing_key", res.status, res.body)
	}
	if res := f.doRaw(t, httptest.NewRequest("GET", "/v1/stream/events?token=wh_0123456789ab_"+strings.Repeat("0", 64), nil)); res.status != 401 || res.body["code"] != "auth.invalid_token" {
		t.Errorf("an API key in ?token=: got %d %v, want 401 auth.invalid_token", res.status, res.body)
	}
	if !strings.Contains(f.log.String(), "audit: authentication failed") || strings.Contains(f.log.String(), tok) {
		t.Errorf("audit log: want the failures, never the token:\n%s", f.log.String())
	}
}

// TestJWKSRotation checks that a new kid is picked up without a restart, at most once per
// jwks_min_interval however many tokens name it, and that a key removed from the set stops
// verifying once the set is older than jwks_refresh.
func TestJWKSRotation(t *testing.T) {
	f, k := newJWTFixture(t)
	token := func(kid string, key *rsa.PrivateKey) string {
		return sign(t, jwt.SigningMethodRS256, kid, key, f.claims(nil))
	}
	status := func(tok string) int { return f.do(t, "POST", "/v1/query", tok).status }
	if s := status(token("r1", k.rsa1)); s != 200 {
		t.Fatalf("r1 token: %d", s)
	}
	if n := k.jwks.Fetches.Load(); n != 1 {
		t.Fatalf("fetches after the first token: %d, want 1", n)
	}
	k.jwks.Serve(t, map[string]any{"r1": &k.rsa1.PublicKey, "r2": &k.rsa2.PublicKey})
	// Within jwks_min_interval of the last fetch, an unknown kid does not fetch again.
	f.now = f.now.Add(5 * time.Second)
	for range 20 {
		if s := status(token("r2", k.rsa2)); s != 401 {
			t.Fatalf("r2 token before the min interval: %d, want 401", s)
		}
	}
	if n := k.jwks.Fetches.Load(); n != 1 {
		t.Fatalf("fetches after 20 unknown-kid tokens within the min interval: %d, want 1", n)
	}
	f.now = f.now.Add(5 * time.Second)
	if s := status(token("r2", k.rsa2)); s != 200 {
		t.Fatalf("r2 token after the min interval: %d, want 200 (new kid picked up)", s)
	}
	k.jwks.Serve(t, map[string]any{"r2": &k.rsa2.PublicKey})
	// r1 is still cached until the set is older than jwks_refresh (1m) …
	f.now = f.now.Add(59 * time.Second)
	if s := status(token("r1", k.rsa1)); s != 200 {
		t.Fatalf("r1 token within the refresh interval: %d, want 200 (cached)", s)
	}
	// … and stops verifying once it is.
	f.now = f.now.Add(time.Second)
	if s := status(token("r1", k.rsa1)); s != 401 {
		t.Fatalf("r1 token after the refresh interval: %d, want 401 (removed key)", s)
	}
	if s := status(token("r2", k.rsa2)); s != 200 {
		t.Fatalf("r2 token after the rotation: %d, want 200", s)
	}
	// An unreachable key set keeps the keys fetched last.
	k.jwks.Close()
	f.now = f.now.Add(2 * time.Minute)
	if s := status(token("r2", k.rsa2)); s != 200 {
		t.Fatalf("r2 token with the JWKS server down: %d, want 200 (previous keys stay)", s)
	}
}

// TestJWTOrigin checks that a cross-origin request acts only for a tenant whose cors settings
// list its origin (exact or wildcard subdomain); same-origin and Origin-less requests pass.
func TestJWTOrigin(t *testing.T) {
	f, k := newJWTFixture(t)
	acme := sign(t, jwt.SigningMethodHS256, "", k.acmeHS, f.claims(nil))
	globex := sign(t, jwt.SigningMethodHS256, "", k.globexHS, f.claims(func(c jwt.MapClaims) { c["iss"], c["role"] = "https://idp.globex.test/", "viewer" }))
	for _, c := range []struct {
		token, origin string
		status        int
	}{
		{acme, "https://app.acme.test", 200},
		{acme, "https://eu.app.acme.test", 200},
		{acme, "https://acme.test", 403},
		{acme, "https://evil.test", 403},
		{acme, "http://app.acme.test", 403},
		{acme, "http://example.com", 200}, // httptest's own host: same origin
		{acme, "", 200},
		{globex, "https://app.acme.test", 403}, // globex has no cors block
	} {
		r := f.do(t, "POST", "/v1/query", c.token, "Origin", c.origin)
		if r.status != c.status || (c.status == 403 && r.body["code"] != "auth.origin_not_allowed") {
			t.Errorf("Origin %q: got %d %v, want %d", c.origin, r.status, r.body, c.status)
		}
	}
}

// TestJWTNumericClaimsStayExact checks that a numeric claim reaches the policies as the token's
// literal: an integer above 2^53 read as a float64 would bind a neighbouring value
// (9007199254740993 → 9007199254740992) into a row filter.
func TestJWTNumericClaimsStayExact(t *testing.T) {
	f, k := newJWTFixture(t)
	const big = "9007199254740993"
	r := f.do(t, "POST", "/v1/query", sign(t, jwt.SigningMethodHS256, "", k.acmeHS, f.claims(func(c jwt.MapClaims) {
		c["org_id"], c["ratio"] = json.Number(big), json.Number("0.1")
	})))
	if r.status != 200 {
		t.Fatalf("got %d %v, want 200", r.status, r.body)
	}
	for claim, want := range map[string]string{"org_id": big, "ratio": "0.1"} {
		got, err := json.Marshal(r.principal.Claims[claim])
		if err != nil || string(got) != want {
			t.Errorf("claim %s reaches the policy as %s (%v), want %s", claim, got, err, want)
		}
	}
}
