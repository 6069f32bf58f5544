package auth

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"github.com/wavehouse/wavehouse/internal/httpx"
)

// The ClickHouse HTTP interface's credentials. A ClickHouse client sends a user and a password;
// the gateway takes the password as the credential (an API key or a JWT) and ignores the user:
// the tenant and scopes come from the key alone, never from a ClickHouse user (ADR 0014).
const (
	// ClickHouseUserHeader and ClickHouseKeyHeader are ClickHouse's credential headers.
	ClickHouseUserHeader = "X-ClickHouse-User"
	ClickHouseKeyHeader  = "X-ClickHouse-Key"
)

// clickHouseCredential returns the credential of a ClickHouse HTTP request, from the first of:
// Authorization: Bearer, the password of Authorization: Basic, X-ClickHouse-Key, ?password=. The
// user and password parameters are removed from r.URL (so no handler or log line sees them). An
// empty password (ClickHouse's default user has none) is no credential.
func clickHouseCredential(r *http.Request) (string, bool) {
	token := ""
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, rest, _ := strings.Cut(h, " ")
		rest = strings.TrimSpace(rest)
		switch {
		case strings.EqualFold(scheme, "Bearer"):
			token = rest
		case strings.EqualFold(scheme, "Basic"):
			if raw, err := base64.StdEncoding.DecodeString(rest); err == nil {
				_, token, _ = strings.Cut(string(raw), ":")
			}
		}
	}
	if token == "" {
		token = r.Header.Get(ClickHouseKeyHeader)
	}
	if q := r.URL.Query(); q.Has("password") || q.Has("user") {
		if token == "" {
			token = q.Get("password")
		}
		q.Del("password")
		q.Del("user")
		r.URL.RawQuery = q.Encode()
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// Check is the authorization of one action of a ClickHouse HTTP request, which its handler runs
// once it knows the statement: p must hold scope, and, when table is not empty, be allowed on
// it. It returns the error to answer (403 auth.missing_scope or auth.table_not_allowed), nil when
// the action may proceed.
func Check(p Principal, scope Scope, table string) *httpx.Error {
	if p.Operator {
		return &httpx.Error{Status: http.StatusForbidden, Code: "auth.operator_key_not_allowed", Message: "the operator key is only valid on /v1/ops/*; use a tenant API key"}
	}
	if !p.HasScope(scope) {
		return &httpx.Error{Status: http.StatusForbidden, Code: "auth.missing_scope", Message: fmt.Sprintf("api key lacks scope %q", scope),
			Details: map[string]string{"missing_scope": string(scope)}}
	}
	if table != "" && !p.AllowsTable(table) {
		return &httpx.Error{Status: http.StatusForbidden, Code: "auth.table_not_allowed", Message: fmt.Sprintf("api key is not allowed on table %q", table)}
	}
	return nil
}

// writeError answers e in the form of the route: ClickHouse's for the ClickHouse HTTP interface
// (unless the client asks for JSON), else the gateway's JSON.
func writeError(w http.ResponseWriter, r *http.Request, rule Rule, e httpx.Error) {
	if rule.ClickHouse {
		httpx.WriteClickHouseForm(w, r, e)
		return
	}
	httpx.WriteError(w, e)
}
