package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"errors"
	"strings"

	"github.com/golang-jwt/jwt/v5"

	"github.com/wavehouse/wavehouse/internal/policy"
	"github.com/wavehouse/wavehouse/internal/settings"
)

// looksLikeJWT tells a JWT (three base64url segments) from an API key (wh_<id>_<secret>) and
// the operator key, neither of which holds a dot.
func looksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

// verifyJWT verifies token and maps it to a principal of the tenant whose key verified it. The
// unverified iss claim only selects the tenant whose keys are tried: a token signed by another
// tenant's key fails verification.
func (a *Authenticator) verifyJWT(ctx context.Context, token string) (Principal, error) {
	var unverified jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &unverified); err != nil {
		return Principal{}, ErrInvalidToken
	}
	tenant, ok := a.settings.Current().TenantByIssuer(unverified.Issuer)
	if !ok {
		return Principal{}, ErrInvalidToken
	}
	cfg := tenant.JWT
	claims := jwt.MapClaims{}
	p := jwt.NewParser(jwt.WithValidMethods([]string{"HS256", "RS256", "ES256"}), jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(cfg.Audience), jwt.WithLeeway(cfg.Leeway), jwt.WithExpirationRequired(), jwt.WithTimeFunc(a.now),
		// Numbers stay the token's literals (json.Number): a claim above 2^53 bound into a row
		// filter must not become its float64 neighbour.
		jwt.WithJSONNumber())
	_, err := p.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) { return a.verificationKeys(ctx, tenant, t) })
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return Principal{}, ErrExpiredToken
	case err != nil:
		return Principal{}, ErrInvalidToken
	}
	roleName, _ := claims[cfg.RoleClaim].(string)
	role, ok := cfg.Roles[roleName]
	if !ok {
		return Principal{}, ErrUnknownRole
	}
	sub, _ := claims.GetSubject()
	return Principal{Tenant: tenant.Name, Subject: sub, Role: roleName, Scopes: role.Scopes, Tables: role.Tables, Token: true,
		Claims: policy.Claims(claims), Policies: role.Policies, MaxRows: role.MaxRows, MaxExecutionTime: role.MaxExecutionTime}, nil
}

// verificationKeys returns the keys that may have signed t: the tenant's HS256 secrets, or the
// key of t's kid in its JWKS (every key of the algorithm's type when t names no kid).
func (a *Authenticator) verificationKeys(ctx context.Context, tenant *settings.Tenant, t *jwt.Token) (any, error) {
	cfg := tenant.JWT
	if t.Method.Alg() == "HS256" {
		if len(cfg.Secrets) == 0 {
			return nil, ErrInvalidToken
		}
		set := jwt.VerificationKeySet{}
		for _, s := range cfg.Secrets {
			set.Keys = append(set.Keys, s)
		}
		return set, nil
	}
	src := cfg.JWKSURL
	if src == "" {
		src = cfg.JWKSFile
	}
	if src == "" {
		return nil, ErrInvalidToken
	}
	kid, _ := t.Header["kid"].(string)
	keys := a.jwks.keys(ctx, tenant.Name, cfg, kid)
	set := jwt.VerificationKeySet{}
	for _, k := range keys {
		switch k.(type) {
		case *rsa.PublicKey:
			if t.Method.Alg() == "RS256" {
				set.Keys = append(set.Keys, k)
			}
		case *ecdsa.PublicKey:
			if t.Method.Alg() == "ES256" {
				set.Keys = append(set.Keys, k)
			}
		}
	}
	if len(set.Keys) == 0 {
		return nil, ErrInvalidToken
	}
	return set, nil
}
