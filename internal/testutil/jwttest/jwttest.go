// Package jwttest serves JSON Web Key Sets over real HTTP and signs tokens, for the tests of
// JWT verification (internal/auth) and of the binary (tests/tenants).
package jwttest

import (
	"crypto/ecdsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// JWKS is an HTTP server of a key set the test can change; Fetches counts the GETs it answered.
type JWKS struct {
	*httptest.Server
	Fetches atomic.Int64

	mu   sync.Mutex
	keys []jwkset.JWKMarshal
}

// NewJWKS starts a JWKS server with an empty set, closed when t ends.
func NewJWKS(t testing.TB) *JWKS {
	s := &JWKS{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(jwkset.JWKSMarshal{Keys: s.keys})
	}))
	t.Cleanup(s.Close)
	return s
}

// Serve replaces the set with keys (RSA or EC P-256 public keys) by kid.
func (s *JWKS) Serve(t testing.TB, keys map[string]any) {
	t.Helper()
	var out []jwkset.JWKMarshal
	for kid, k := range keys {
		alg := jwkset.AlgRS256
		if _, ok := k.(*ecdsa.PublicKey); ok {
			alg = jwkset.AlgES256
		}
		j, err := jwkset.NewJWKFromKey(k, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: alg, USE: jwkset.UseSig}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, j.Marshal())
	}
	s.mu.Lock()
	s.keys = out
	s.mu.Unlock()
}

// Sign returns a token of claims signed with key by m, with kid in its header when not empty.
func Sign(t testing.TB, m jwt.SigningMethod, kid string, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
