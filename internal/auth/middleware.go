package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/wavehouse/wavehouse/internal/httpx"
)

// Require wraps next so that it runs only for a principal satisfying rule, with the principal in
// the request context (FromContext). Failures answer 401 or 403 with a JSON error and an audit
// line; the handler is not called.
func (a *Authenticator) Require(rule Rule, next http.Handler) http.Handler {
	if rule.Public {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, keyID, err := a.authenticate(r, rule)
		if err != nil {
			a.deny(w, r, keyID, err, rule)
			return
		}
		if e := a.authorize(&p, rule, r); e != nil {
			a.count(e.Code)
			a.log.WarnContext(r.Context(), "audit: access denied", auditAttrs(r, p.KeyID, "tenant", p.Tenant, "operator", p.Operator, "reason", e.Code)...)
			if e.Status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="wavehouse"`)
			}
			writeError(w, r, rule, *e)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !a.allowsOrigin(p, origin, r) {
			a.count("auth.origin_not_allowed")
			a.log.WarnContext(r.Context(), "audit: access denied", auditAttrs(r, p.KeyID, "tenant", p.Tenant, "origin", origin, "reason", "auth.origin_not_allowed")...)
			writeError(w, r, rule, httpx.Error{Status: http.StatusForbidden, Code: "auth.origin_not_allowed",
				Message: "this tenant's cors settings do not allow origin " + origin})
			return
		}
		if rule.Ops {
			a.log.InfoContext(r.Context(), "audit: ops request", auditAttrs(r, p.KeyID, "tenant", p.Tenant, "operator", p.Operator)...)
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// authorize checks p against rule, filling p.Tenant for the operator. It returns the error to
// answer, or nil when the request may proceed.
func (a *Authenticator) authorize(p *Principal, rule Rule, r *http.Request) *httpx.Error {
	deny := func(status int, code, msg string) *httpx.Error {
		return &httpx.Error{Status: status, Code: code, Message: msg}
	}
	if p.Operator {
		if !rule.Ops {
			return deny(http.StatusForbidden, "auth.operator_key_not_allowed", "the operator key is only valid on /v1/ops/*; use a tenant API key")
		}
		if rule.OperatorOnly {
			return nil
		}
		t := r.URL.Query().Get("tenant")
		if t == "" {
			return deny(http.StatusBadRequest, "auth.tenant_required", "the operator key must name the tenant with ?tenant=")
		}
		if !a.knownTenant(t) {
			return deny(http.StatusBadRequest, "auth.unknown_tenant", fmt.Sprintf("no tenant %q in settings", t))
		}
		p.Tenant = t
		return nil
	}
	if p.Anonymous && rule.Ops {
		return deny(http.StatusUnauthorized, "auth.anonymous_ops", "anonymous access covers ingest, query and stream only; "+opsCredentialHint)
	}
	if rule.OperatorOnly {
		return deny(http.StatusForbidden, "auth.operator_only", "this route needs the operator key")
	}
	if rule.ClickHouse {
		// The handler checks the exact scope (and table) once it has read the statement
		// (Check); a key that can neither insert nor query is refused here already.
		if !p.HasScope(ScopeIngest) && !p.HasScope(ScopeQuery) {
			return Check(*p, ScopeQuery, "")
		}
		return nil
	}
	if !p.HasScope(rule.Scope) {
		e := deny(http.StatusForbidden, "auth.missing_scope", fmt.Sprintf("api key lacks scope %q", rule.Scope))
		e.Details = map[string]string{"missing_scope": string(rule.Scope)}
		return e
	}
	if rule.TableParam != "" {
		if t := r.PathValue(rule.TableParam); t != "" && !p.AllowsTable(t) {
			return deny(http.StatusForbidden, "auth.table_not_allowed", fmt.Sprintf("api key is not allowed on table %q", t))
		}
	}
	return nil
}

// opsCredentialHint says how to call an operator route; it names the config key and the default
// file, never a path of this server, and no < or > (JSON answers escape them).
const opsCredentialHint = "operator routes need the operator key or a tenant admin key: send Authorization: Bearer KEY, KEY being the content of auth.operator_key_file or, when that is empty, of " + GeneratedOperatorKeyName + " in data_dir (generated at first boot; data/" + GeneratedOperatorKeyName + " with make run)"

func (a *Authenticator) deny(w http.ResponseWriter, r *http.Request, keyID string, err error, rule Rule) {
	code, msg := "auth.invalid_key", "invalid or revoked api key"
	switch {
	case errors.Is(err, ErrMissingKey) && rule.Ops:
		code, msg = "auth.missing_key", opsCredentialHint
	case errors.Is(err, ErrMissingKey) && rule.ClickHouse:
		code, msg = "auth.missing_key", "send the API key as the password (HTTP Basic, X-ClickHouse-Key or ?password=) or as Authorization: Bearer"
	case errors.Is(err, ErrMissingKey):
		code, msg = "auth.missing_key", "send Authorization: Bearer <api key>"
	case errors.Is(err, ErrExpiredKey):
		code, msg = "auth.expired_key", "api key expired"
	case errors.Is(err, ErrInvalidToken):
		code, msg = "auth.invalid_token", "invalid token: bad signature, issuer or audience, or not yet valid"
	case errors.Is(err, ErrExpiredToken):
		code, msg = "auth.expired_token", "token expired"
	case errors.Is(err, ErrUnknownRole):
		a.count("auth.role_not_allowed")
		a.log.WarnContext(r.Context(), "audit: access denied", auditAttrs(r, keyID, "reason", "auth.role_not_allowed")...)
		writeError(w, r, rule, httpx.Error{Status: http.StatusForbidden, Code: "auth.role_not_allowed", Message: "the token's role is not one of the tenant's jwt.roles"})
		return
	}
	a.count(code)
	a.log.WarnContext(r.Context(), "audit: authentication failed", auditAttrs(r, keyID, "reason", code)...)
	w.Header().Set("WWW-Authenticate", `Bearer realm="wavehouse"`)
	writeError(w, r, rule, httpx.Error{Status: http.StatusUnauthorized, Code: code, Message: msg})
}

// auditAttrs are the attributes of every audit line: never the credential, only its public id.
func auditAttrs(r *http.Request, keyID string, more ...any) []any {
	attrs := []any{slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("remote", r.RemoteAddr)}
	if keyID != "" {
		attrs = append(attrs, slog.String("key_id", keyID))
	}
	return append(attrs, more...)
}

// count counts a refusal by its error code.
func (a *Authenticator) count(code string) {
	if a.denied != nil {
		a.denied.WithLabelValues(code).Inc()
	}
}

// allowsOrigin reports whether a cross-origin browser request (its Origin differs from the
// request's own host) may act as p: only when p's tenant's cors settings list the origin. The
// CORS middleware answers a preflight for the union of all tenants' origins, since a preflight
// carries no credential; this check narrows the actual request to its own tenant.
func (a *Authenticator) allowsOrigin(p Principal, origin string, r *http.Request) bool {
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return true // same origin
	}
	t, ok := a.settings.Current().Tenant(p.Tenant)
	return ok && t.CORS.AllowsOrigin(origin)
}
