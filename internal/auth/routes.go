package auth

import (
	"fmt"
	"net/http"
	"strings"
)

// Rule is what a route demands of its caller.
type Rule struct {
	// Scope is the scope a tenant key needs.
	Scope Scope
	// TableParam, when set, names the path value holding the table the route touches; keys
	// restricted to tables must list it.
	TableParam string
	// Ops marks /v1/ops/* routes: the operator key may call them, naming the tenant with ?tenant=.
	Ops bool
	// OperatorOnly marks routes only the operator key may call (process-wide actions).
	OperatorOnly bool
	// QueryToken lets a JWT arrive as ?token= (EventSource cannot set headers); the parameter
	// is removed from the request before the handler sees it.
	QueryToken bool
	// ClickHouse marks the ClickHouse HTTP interface: the credential may also come as the
	// password of a ClickHouse client (HTTP Basic, X-ClickHouse-Key, ?password=), errors are
	// answered in ClickHouse's form, and the handler checks the statement's scope and table
	// with Check (an INSERT needs ingest, a read query); Require only refuses a key holding
	// neither.
	ClickHouse bool
	// Public marks a route that needs no credential (the ClickHouse interface's /ping, a
	// liveness answer that reveals nothing).
	Public bool
}

// opsPrefix is the path prefix of operator routes.
const opsPrefix = "/v1/ops/"

// Routes returns the route→rule table of the public API, keyed by ServeMux pattern. Routes that
// read tables named inside SQL (query, pipes) check them in the handler with
// Principal.AllowsTable.
func Routes() map[string]Rule {
	ingest := Rule{Scope: ScopeIngest, TableParam: "table"}
	query := Rule{Scope: ScopeQuery}
	admin := Rule{Scope: ScopeAdmin, Ops: true}
	adminTable := Rule{Scope: ScopeAdmin, Ops: true, TableParam: "table"}
	return map[string]Rule{
		"POST /v1/ingest/{table}":         ingest,
		"POST /v1/query":                  query,
		"GET /v1/pipes":                   query,
		"GET /v1/pipes/{name}":            query,
		"POST /v1/pipes/{name}":           query,
		"GET /v1/stream/{table}":          {Scope: ScopeStream, TableParam: "table", QueryToken: true},
		"GET /v1/tables":                  query,
		"GET /v1/tables/{table}":          {Scope: ScopeQuery, TableParam: "table"},
		"POST /v1/ops/sql":                admin,
		"GET /v1/ops/dlq":                 admin,
		"GET /v1/ops/dlq/{table}":         adminTable,
		"POST /v1/ops/dlq/{table}/replay": adminTable,
		"DELETE /v1/ops/dlq/{table}":      adminTable,
		"POST /v1/ops/settings/reload":    {Scope: ScopeAdmin, Ops: true, OperatorOnly: true},
		"GET /{$}":                        {ClickHouse: true},
		"POST /{$}":                       {ClickHouse: true},
		"GET /ping":                       {Public: true},
	}
}

// RuleFor returns the rule of a ServeMux pattern. Patterns missing from Routes under /v1/ops/
// get the admin ops rule, so a new ops route is never left open; other unknown patterns are not
// found.
func RuleFor(pattern string) (Rule, bool) {
	if r, ok := Routes()[pattern]; ok {
		return r, true
	}
	_, path, _ := strings.Cut(pattern, " ")
	if path == "" {
		path = pattern
	}
	if strings.HasPrefix(path, opsPrefix) {
		return Rule{Scope: ScopeAdmin, Ops: true}, true
	}
	return Rule{}, false
}

// Handle registers h on mux under pattern behind Require with the pattern's rule. It returns an
// error for a pattern without a rule, so that no route is served unguarded by mistake.
func (a *Authenticator) Handle(mux *http.ServeMux, pattern string, h http.Handler) error {
	rule, ok := RuleFor(pattern)
	if !ok {
		return fmt.Errorf("auth: no rule for route %q: add it to auth.Routes", pattern)
	}
	mux.Handle(pattern, a.Require(rule, h))
	return nil
}
