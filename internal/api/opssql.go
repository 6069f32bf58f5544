package api

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/wavehouse/wavehouse/internal/httpx"
)

// opsSQL runs any statement, DDL included, in the tenant's database. It is the operator's tool
// (and, with the embedded engine, the only way to create a table). Schema caches and the
// tenant's cache versions are refreshed after it, since it may change either.
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
