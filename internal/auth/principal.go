package auth

import (
	"context"
	"slices"
	"time"

	"github.com/wavehouse/wavehouse/internal/policy"
)

// Principal is who a request acts as, derived from its credential.
type Principal struct {
	// Tenant owns the request; empty only for the operator on an ops route without ?tenant=.
	Tenant string
	// KeyID is the API key's id; empty for the operator and anonymous principals.
	KeyID string
	// Scopes are the key's scopes.
	Scopes []Scope
	// Tables, when non-empty, are the only tables the principal may touch.
	Tables []string
	// Subject and Role are a JWT's sub claim and role; empty for API keys.
	Subject, Role string
	// Token is true for a JWT principal.
	Token bool
	// Claims are a JWT's verified claims; nil for API keys.
	Claims policy.Claims
	// Policies are the JWT role's row and column policies by table (docs/jwt.md#policies).
	Policies map[string]*policy.Table
	// MaxRows and MaxExecutionTime are the JWT role's query limits (0: the tenant's).
	MaxRows          uint64
	MaxExecutionTime time.Duration
	// Operator is true for the operator key.
	Operator bool
	// Anonymous is true when no keys are configured and the listener allows anonymous access.
	Anonymous bool
}

// HasScope reports whether p grants s. The operator and anonymous principals hold every scope
// (yet the anonymous one reaches /v1/ops/* only with Config.AnonymousOps).
func (p Principal) HasScope(s Scope) bool {
	return p.Operator || p.Anonymous || slices.Contains(p.Scopes, s)
}

// AllowsTable reports whether p may touch table. The API calls it for every table a query reads
// and filters table listings with it.
func (p Principal) AllowsTable(table string) bool {
	return len(p.Tables) == 0 || slices.Contains(p.Tables, table)
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal Require put in ctx.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// TenantFromContext returns the request's tenant, or "" when the request was not authenticated.
func TenantFromContext(ctx context.Context) string {
	p, _ := FromContext(ctx)
	return p.Tenant
}

// Policy returns the principal's policy on table, nil when it reads the table without one.
func (p Principal) Policy(table string) *policy.Table { return p.Policies[table] }
