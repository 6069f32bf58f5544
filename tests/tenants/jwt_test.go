package tenants_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/wavehouse/wavehouse/internal/testutil/jwttest"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// Both tenants of TestIsolation accept JWTs: tenant a with an HS256 secret file, tenant b with an
// RS256 key set served over HTTP (jwks_refresh 1s, so rotation shows within the test).
const (
	jwtAudience = "wavehouse-test"
	jwtRefresh  = time.Second
)

// issuer is one tenant's token issuer: its HS256 secret or its RSA key in a served JWKS.
type issuer struct {
	Tenant string
	Iss    string
	HS     []byte          // tenant a
	RSA    *rsa.PrivateKey // tenant b, kid "k1" in JWKS
	JWKS   *jwttest.JWKS
}

// withHS256 gives tn a jwt block verifying HS256 with a fresh secret file.
func withHS256(t *testing.T, tn *tenant) *issuer {
	t.Helper()
	return withHS256Roles(t, tn, matrixRoles)
}

// withHS256Roles is withHS256 with the given roles (YAML indented by four spaces).
func withHS256Roles(t *testing.T, tn *tenant, roles string) *issuer {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	is := &issuer{Tenant: tn.Name, Iss: "https://idp." + tn.Name + ".test/", HS: []byte(hex.EncodeToString(b))}
	secrets.add("HS256 secret of "+tn.Name, string(is.HS))
	p := filepath.Join(t.TempDir(), "hs256")
	if err := os.WriteFile(p, append(is.HS, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	tn.Extra += jwtBlock(is.Iss, "secret_files: ["+p+"]", roles)
	return is
}

// withJWKS gives tn a jwt block verifying RS256 with a key set served by an httptest server.
func withJWKS(t *testing.T, tn *tenant) *issuer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{Tenant: tn.Name, Iss: "https://idp." + tn.Name + ".test/", RSA: k, JWKS: jwttest.NewJWKS(t)}
	is.JWKS.Serve(t, map[string]any{"k1": &k.PublicKey})
	tn.Extra += jwtBlock(is.Iss, fmt.Sprintf("jwks_url: %s\n  jwks_refresh: %s\n  jwks_min_interval: 200ms", is.JWKS.URL, jwtRefresh), matrixRoles)
	return is
}

// matrixRoles are the roles of the isolation test's tokens: app acts like a key of three
// scopes, narrow like a key restricted to the table other, and own reads and writes only the
// events whose id is its sub claim, never their column n (docs/jwt.md#policies).
const matrixRoles = `    app: {scopes: [ingest, query, stream]}
    narrow: {scopes: [query], tables: [other]}
    own:
      scopes: [ingest, query, stream]
      tables: [events]
      policies:
        events: {deny_columns: [n], filter: "id = {claim:sub}", set: {id: "{claim:sub}"}}
`

// jwtBlock is a tenant's jwt block for iss with the key lines keys and the roles (YAML indented
// by four spaces), and a cors block for the tenant's subdomains.
func jwtBlock(iss, keys, roles string) string {
	return fmt.Sprintf(`jwt:
  issuer: %s
  audience: %s
  %s
  roles:
%scors:
  origins: ["https://*.%s.test"]
`, iss, jwtAudience, keys, roles, strings.TrimSuffix(strings.TrimPrefix(iss, "https://idp."), ".test/"))
}

// claims are a valid token's claims for role, changed by edit.
func (is *issuer) claims(role string, edit func(jwt.MapClaims)) jwt.MapClaims {
	c := jwt.MapClaims{"iss": is.Iss, "aud": jwtAudience, "sub": "user-of-" + is.Tenant, "role": role,
		"exp": time.Now().Add(time.Hour).Unix(), "nbf": time.Now().Add(-time.Minute).Unix()}
	if edit != nil {
		edit(c)
	}
	return c
}

// sign signs c with the issuer's own key (HS256 secret, or RS256 key k1).
func (is *issuer) sign(t *testing.T, c jwt.MapClaims) string {
	t.Helper()
	if is.HS != nil {
		return jwttest.Sign(t, jwt.SigningMethodHS256, "", is.HS, c)
	}
	return jwttest.Sign(t, jwt.SigningMethodRS256, "k1", is.RSA, c)
}

// token is a valid token of role.
func (is *issuer) token(t *testing.T, role string) string { return is.sign(t, is.claims(role, nil)) }

// jwtCallers are the matrix rows of tokens: valid tokens of each issuer's roles (acting like a
// key with the role's scopes and tables), and, against the first issuer, an expired token, one
// for another audience, one signed by a stray key, and one signed by the other tenant's key.
func jwtCallers(t *testing.T, a, b *issuer) []caller {
	var cs []caller
	for _, is := range []*issuer{a, b} {
		cs = append(cs,
			caller{Name: "JWT " + is.Tenant + "/app", Token: is.token(t, "app"), Key: &apiKey{Name: "jwt app", Tenant: is.Tenant, Scopes: "ingest,query,stream"}},
			caller{Name: "JWT " + is.Tenant + "/narrow", Token: is.token(t, "narrow"), Key: &apiKey{Name: "jwt narrow", Tenant: is.Tenant, Scopes: "query", Tables: "other"}},
			// The matrix ingests {"id":"matrix"}: the sub the own role forces into id.
			caller{Name: "JWT " + is.Tenant + "/own (row policy)", Token: is.sign(t, is.claims("own", func(c jwt.MapClaims) { c["sub"] = "matrix" })),
				Key: &apiKey{Name: "jwt own", Tenant: is.Tenant, Scopes: "ingest,query,stream", Tables: "events"}})
	}
	stray := &issuer{Tenant: a.Tenant, Iss: a.Iss, HS: []byte(strings.Repeat("stray", 8))}
	otherKey := &issuer{Tenant: a.Tenant, Iss: a.Iss, RSA: b.RSA} // a's issuer, signed by b's JWKS key
	return append(cs,
		caller{Name: "expired JWT of " + a.Tenant, Token: a.sign(t, a.claims("app", func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() })), BadCode: "auth.expired_token"},
		caller{Name: "JWT of " + a.Tenant + " for another audience", Token: a.sign(t, a.claims("app", func(c jwt.MapClaims) { c["aud"] = "elsewhere" })), BadCode: "auth.invalid_token"},
		caller{Name: "JWT of " + a.Tenant + " signed by a stray key", Token: stray.token(t, "app"), BadCode: "auth.invalid_token"},
		caller{Name: "JWT of " + a.Tenant + " signed by " + b.Tenant + "'s key", Token: otherKey.token(t, "app"), BadCode: "auth.invalid_token"},
		caller{Name: "JWT of " + b.Tenant + " signed by " + a.Tenant + "'s key", Token: jwttest.Sign(t, jwt.SigningMethodHS256, "", a.HS, b.claims("app", nil)), BadCode: "auth.invalid_token"},
	)
}

// checkJWTData reads each tenant's rows with its token, by header and, on the stream route, by
// ?token=: a token only ever sees its own tenant's rows (checkIngestQuery wrote row-of-<tenant>).
func checkJWTData(t *testing.T, g *gateway, issuers ...*issuer) {
	for _, is := range issuers {
		tok := is.token(t, "app")
		if got := g.ids(t, tok, "SELECT id FROM events WHERE id LIKE 'row-of-%' ORDER BY id"); !slices.Equal(got, []string{"row-of-" + is.Tenant}) {
			t.Errorf("query with a JWT of %s: ids %q, want only its own row", is.Tenant, got)
		}
		s := g.openStream(t, "", "events?token="+tok)
		if s.Status != http.StatusOK {
			t.Fatalf("stream with ?token= of %s: status %d", is.Tenant, s.Status)
		}
		s.waitFor(t, "the stream of "+is.Tenant+" by ?token=", "row-of-"+is.Tenant)
		for _, other := range issuers {
			if other != is && strings.Contains(s.text(), "row-of-"+other.Tenant) {
				t.Errorf("stream with ?token= of %s delivered %s's row", is.Tenant, other.Tenant)
			}
		}
		s.close()
		if s := g.openStream(t, "", "events?token="+is.sign(t, is.claims("app", func(c jwt.MapClaims) { c["aud"] = "x" }))); s.Status != http.StatusUnauthorized {
			t.Errorf("stream with a bad ?token= of %s: status %d, want 401", is.Tenant, s.Status)
		}
	}
	for _, is := range issuers {
		// own reads only the events whose id is its sub, and never their column n.
		tok := is.sign(t, is.claims("own", func(c jwt.MapClaims) { c["sub"] = "row-of-" + is.Tenant }))
		if got := g.ids(t, tok, "SELECT * FROM events ORDER BY id"); !slices.Equal(got, []string{"row-of-" + is.Tenant}) {
			t.Errorf("query with a JWT of %s/own: ids %q, want only the row its sub names", is.Tenant, got)
		}
		if r := g.query(t, tok, "SELECT n FROM events"); r.Status != http.StatusForbidden || r.Code() != "policy.column_denied" {
			t.Errorf("query of a denied column with a JWT of %s/own: %s, want 403 policy.column_denied", is.Tenant, r)
		}
	}
	if out := g.proc.Output(); strings.Contains(out, "token=") {
		t.Errorf("the gateway's output mentions a ?token= query string")
	}
}

// checkJWKSRotation rotates b's key set: a token of a new kid verifies without a restart, and a
// token of the removed kid stops verifying (within jwks_refresh).
func checkJWKSRotation(t *testing.T, g *gateway, b *issuer) {
	k2, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	old := b.token(t, "app")
	fresh := jwttest.Sign(t, jwt.SigningMethodRS256, "k2", k2, b.claims("app", nil))
	status := func(tok string) int { return g.do(t, http.MethodGet, "/v1/pipes", tok, nil).Status }
	if s := status(fresh); s != http.StatusUnauthorized {
		t.Fatalf("k2 token before the rotation: %d, want 401", s)
	}
	b.JWKS.Serve(t, map[string]any{"k1": &b.RSA.PublicKey, "k2": &k2.PublicKey})
	poll.Until(t, 30*time.Second, "a token of the new kid k2 verifies", func() bool { return status(fresh) == http.StatusOK })
	b.JWKS.Serve(t, map[string]any{"k2": &k2.PublicKey})
	removed := time.Now()
	poll.Until(t, 30*time.Second, "a token of the removed kid k1 stops verifying", func() bool { return status(old) == http.StatusUnauthorized })
	t.Logf("k1 refused %s after its removal (jwks_refresh %s)", time.Since(removed).Round(10*time.Millisecond), jwtRefresh)
	if s := status(fresh); s != http.StatusOK {
		t.Errorf("k2 token after the rotation: %d, want 200", s)
	}
}

// checkCORS sends preflights and actual requests from tenant a's origins, from an origin no tenant
// allows, and with b's token from a's origin.
func checkCORS(t *testing.T, g *gateway, a, b *issuer) {
	allowed, evil := "https://app."+a.Tenant+".test", "https://evil.test"
	pre := func(origin string) (int, http.Header) {
		r := g.do(t, http.MethodOptions, "/v1/query", "", nil, "Origin", origin, "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "authorization, content-type")
		return r.Status, r.Header
	}
	if s, h := pre(allowed); s != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != allowed ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") || h.Get("Access-Control-Max-Age") != "600" {
		t.Errorf("preflight from %s: %d %v", allowed, s, h)
	}
	if s, h := pre(evil); s != http.StatusForbidden || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from %s: %d %v, want 403 without Access-Control-Allow-Origin", evil, s, h)
	}
	body := []byte(`{"sql":"SELECT id FROM events WHERE id = 'row-of-` + a.Tenant + `'","format":"ndjson"}`)
	r := g.do(t, http.MethodPost, "/v1/query", a.token(t, "app"), body, "Origin", allowed)
	if r.Status != http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") != allowed || r.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("query from %s with %s's token: %s", allowed, a.Tenant, r)
	}
	// b's token from a's origin: the preflight passed (a allows it), the request must not.
	r = g.do(t, http.MethodPost, "/v1/query", b.token(t, "app"), body, "Origin", allowed)
	if r.Status != http.StatusForbidden || r.APIError().Code != "auth.origin_not_allowed" || strings.Contains(string(r.Body), "row-of-") {
		t.Errorf("query from %s with %s's token: %s, want 403 auth.origin_not_allowed", allowed, b.Tenant, r)
	}
	if r = g.do(t, http.MethodPost, "/v1/query", a.token(t, "app"), body, "Origin", evil); r.Status != http.StatusForbidden || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("query from %s: %s, want 403 without Access-Control-Allow-Origin", evil, r)
	}
}
