package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/httpx"
)

// ConsoleCookie is the name of the operator console's session cookie.
const ConsoleCookie = "wh_console"

// ConsoleCSRFHeader must be present on every console request that is not a GET or HEAD and
// carries the session cookie: a cross-site form cannot set it, and a cross-site fetch that sets
// it needs a preflight the console never answers.
const ConsoleCSRFHeader = "X-Wavehouse-Console"

// consoleSessionLabel separates console session MACs from any other use of the operator key.
const consoleSessionLabel = "wavehouse console session\x00"

// ConsoleEnabled reports whether an operator key is configured: without one the console has no
// credential to ask for and refuses every request.
func (a *Authenticator) ConsoleEnabled() bool { return a.operator.Load() != nil }

// ConsoleLogin checks key against the operator key and, when it matches, returns a session
// value valid until now+ttl for the ConsoleCookie. The value is the expiry and an HMAC of it
// keyed by the operator key's hash: the server keeps no session state, and rotating the operator
// key (ReloadOperatorKey) ends every session.
func (a *Authenticator) ConsoleLogin(key string, ttl time.Duration) (value string, expires time.Time, ok bool) {
	op := a.operator.Load()
	if op == nil {
		return "", time.Time{}, false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(key)))
	if subtle.ConstantTimeCompare(sum[:], op[:]) != 1 {
		a.count("auth.invalid_key")
		return "", time.Time{}, false
	}
	expires = a.now().Add(ttl).Truncate(time.Second)
	exp := strconv.FormatInt(expires.Unix(), 10)
	return exp + "." + consoleMAC(op, exp), expires, true
}

// consoleMAC is the hex HMAC-SHA256 of a session's expiry under the operator key's hash.
func consoleMAC(op *[sha256.Size]byte, exp string) string {
	m := hmac.New(sha256.New, op[:])
	m.Write([]byte(consoleSessionLabel + exp))
	return hex.EncodeToString(m.Sum(nil))
}

// consoleSession reports whether value is an unexpired session minted under the current
// operator key.
func (a *Authenticator) consoleSession(value string) bool {
	op := a.operator.Load()
	exp, mac, ok := strings.Cut(value, ".")
	if op == nil || !ok {
		return false
	}
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || !a.now().Before(time.Unix(unix, 0)) {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(consoleMAC(op, exp)))
}

// RequireConsole wraps a console handler: it runs only for the operator, who proves it with the
// session cookie ConsoleLogin minted or with `Authorization: Bearer <operator key>`. With
// ?tenant= the request acts as that tenant (which must exist), like the operator on an ops route.
// A request without the credential gets denied (the login page, or a JSON 401); tenant keys,
// JWTs and anonymous access never reach a console handler.
func (a *Authenticator) RequireConsole(next, denied http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.ConsoleEnabled() {
			a.count("auth.console_disabled")
			httpx.WriteError(w, httpx.Error{Status: http.StatusNotFound, Code: "auth.console_disabled",
				Message: "the console needs the operator key: set auth.operator_key_file"})
			return
		}
		viaCookie := false
		if h := r.Header.Get("Authorization"); h != "" {
			p, _, err := a.authenticate(r, Rule{})
			if err != nil || !p.Operator {
				a.count("auth.console_operator_only")
				a.log.WarnContext(r.Context(), "audit: access denied", auditAttrs(r, p.KeyID, "reason", "auth.console_operator_only")...)
				httpx.WriteError(w, httpx.Error{Status: http.StatusForbidden, Code: "auth.console_operator_only",
					Message: "the console accepts only the operator key"})
				return
			}
		} else if c, err := r.Cookie(ConsoleCookie); err == nil && a.consoleSession(c.Value) {
			viaCookie = true
		} else {
			a.count("auth.console_login_required")
			denied.ServeHTTP(w, r)
			return
		}
		if viaCookie && r.Method != http.MethodGet && r.Method != http.MethodHead && r.Header.Get(ConsoleCSRFHeader) == "" {
			a.count("auth.console_csrf")
			httpx.WriteError(w, httpx.Error{Status: http.StatusForbidden, Code: "auth.console_csrf",
				Message: "console requests that change state must send the " + ConsoleCSRFHeader + " header"})
			return
		}
		p := Principal{Operator: true}
		if t := r.URL.Query().Get("tenant"); t != "" {
			if !a.knownTenant(t) {
				httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "auth.unknown_tenant", Message: "no tenant " + strconv.Quote(t) + " in settings"})
				return
			}
			p.Tenant = t
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			a.log.InfoContext(r.Context(), "audit: console request", auditAttrs(r, "", "tenant", p.Tenant, "operator", true)...)
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// knownTenant reports whether the operator may act as tenant t: it is in the settings, or it is
// the anonymous tenant while anonymous access is on.
func (a *Authenticator) knownTenant(t string) bool {
	_, ok := a.settings.Current().Tenant(t)
	return ok || (a.Anonymous() && t == a.cfg.AnonymousTenant)
}

// Tenants returns the tenants the operator may act as: every tenant in the settings, and the
// anonymous tenant while anonymous access is on.
func (a *Authenticator) Tenants() []string {
	names := a.settings.Current().TenantNames()
	if a.Anonymous() && !slices.Contains(names, a.cfg.AnonymousTenant) {
		names = append(names, a.cfg.AnonymousTenant)
	}
	return names
}
