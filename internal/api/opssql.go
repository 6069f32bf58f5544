package api

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/query/sqlscan"
)

// opsSQL runs a statement, DDL included, in the tenant's database. With the operator key (or
// anonymously) any statement runs; a tenant's own admin key is confined to its database
// (sqlscan.Confine), and a key restricted to tables may not use it at all. Schema caches and the
// tenant's cache versions are refreshed after it, since it may change either. Whoever sends it,
// a statement touching the server's files or the network (sqlscan.HostAccess) is refused unless
// Config.AllowHostTableFunctions is set.
func (a *API) opsSQL(w http.ResponseWriter, r *http.Request) {
	var req struct {
		SQL string `json:"sql"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || strings.TrimSpace(req.SQL) == "" {
		httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "sql.invalid_request", Message: `send {"sql": "<statement>"} as JSON`})
		return
	}
	tenant := a.tenant(r)
	target, ok := a.target(w, tenant)
	if !ok {
		return
	}
	if p, _ := auth.FromContext(r.Context()); !p.Operator && !p.Anonymous {
		if len(p.Tables) > 0 {
			httpx.WriteError(w, httpx.Error{Status: http.StatusForbidden, Code: "auth.table_not_allowed",
				Message: "a key restricted to tables cannot run operator SQL; use an admin key without tables:"})
			return
		}
		if err := sqlscan.Confine(req.SQL, target.Database); err != nil {
			a.deps.Log.WarnContext(r.Context(), "audit: operator sql refused", "tenant", tenant, "key_id", p.KeyID, "reason", err.Error())
			httpx.WriteError(w, httpx.Error{Status: http.StatusForbidden, Code: "sql.outside_tenant", Message: err.Error()})
			return
		}
	}
	if !a.cfg.AllowHostTableFunctions {
		if err := sqlscan.HostAccess(req.SQL); err != nil {
			a.deps.Log.WarnContext(r.Context(), "audit: operator sql refused", "tenant", tenant, "reason", err.Error())
			httpx.WriteError(w, httpx.Error{Status: http.StatusForbidden, Code: "sql.host_access",
				Message: err.Error() + "; set ops_sql.allow_host_table_functions to allow it"})
			return
		}
	}
	err = a.deps.Store.Exec(r.Context(), target, req.SQL)
	a.deps.Schema.InvalidateDatabase(target)
	if a.deps.Invalidator != nil {
		a.deps.Invalidator.BumpTenant(r.Context(), tenant)
	}
	if err != nil {
		a.storeError(w, err, "")
		return
	}
	a.deps.Log.InfoContext(r.Context(), "audit: operator sql executed", "tenant", tenant, "statement_bytes", len(req.SQL))
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
}
