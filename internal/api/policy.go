package api

import (
	"context"
	"net/http"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/policy"
	"github.com/wavehouse/wavehouse/internal/query"
	"github.com/wavehouse/wavehouse/internal/store"
)

// access returns what p restricts a read of target to: its tables when confined, its role's
// limits and, for a token whose role has policies, the rewrite that reads every policed table
// through its policy (policy.Rewrite; docs/jwt.md#policies) with the columns it may read
// (a ClickHouse-interface DESCRIBE lists only those).
func (a *API) access(ctx context.Context, p auth.Principal, target store.Target, confined bool) query.Access {
	acc := query.Access{MaxRows: p.MaxRows, MaxExecutionTime: p.MaxExecutionTime}
	if confined || len(p.Policies) > 0 {
		acc.AllowTable = p.AllowsTable
	}
	if len(p.Policies) > 0 {
		resolve := a.resolver(ctx, p, target)
		acc.Policy = func(sql string) (string, []store.Param, error) {
			return policy.Rewrite(sql, target.Database, resolve)
		}
		acc.Readable = func(table string) (func(string) bool, error) {
			b, ok, err := resolve(table)
			if err != nil || !ok {
				return nil, err
			}
			return b.Readable, nil
		}
	}
	return acc
}

// resolver binds p's policies to its claims and the columns of target's tables.
func (a *API) resolver(ctx context.Context, p auth.Principal, target store.Target) policy.Resolver {
	return func(table string) (*policy.Bound, bool, error) {
		t := p.Policy(table)
		if t == nil {
			return nil, false, nil
		}
		cols, err := a.deps.Schema.Columns(ctx, target, table)
		if err != nil {
			return nil, false, err
		}
		b, err := t.Bind(table, cols, p.Claims)
		return b, err == nil, err
	}
}

// boundPolicy returns the request principal's policy on table bound to its claims and cols,
// nil without one; herr answers a policy that cannot be bound (a missing claim …).
func boundPolicy(ctx context.Context, table string, cols []store.Column) (*policy.Bound, *httpx.Error) {
	p, _ := auth.FromContext(ctx)
	t := p.Policy(table)
	if t == nil {
		return nil, nil
	}
	b, err := t.Bind(table, cols, p.Claims)
	if err != nil {
		e, ok := policy.HTTPError(err)
		if !ok {
			e = httpx.Error{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()}
		}
		return nil, &e
	}
	return b, nil
}

// stream serves GET /v1/stream/{table}, under the caller's row policy on the table when its
// token's role has one.
func (a *API) stream(w http.ResponseWriter, r *http.Request) {
	tenant := a.tenant(r)
	p, _ := auth.FromContext(r.Context())
	table := r.PathValue("table")
	if p.Policy(table) == nil {
		a.deps.Stream.ServeHTTP(w, r, tenant)
		return
	}
	target, ok := a.target(w, tenant)
	if !ok {
		return
	}
	cols, err := a.deps.Schema.Columns(r.Context(), target, table)
	if err != nil {
		a.storeError(w, err, table)
		return
	}
	b, herr := boundPolicy(r.Context(), table, cols)
	if herr != nil {
		httpx.WriteError(w, *herr)
		return
	}
	a.deps.Stream.ServeHTTPPolicy(w, r, tenant, b)
}
