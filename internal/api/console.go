package api

import (
	"net/http"

	"github.com/wavehouse/wavehouse/internal/httpx"
)

// ConsoleRoutes mounts the API handlers the operator console uses under /console/api, each
// behind guard (console.Console.Guard: the operator only, acting as the tenant named by
// ?tenant=). They are the very handlers of the /v1 routes, so the console shows what a client
// would get: the dead-letter routes, read-only queries with the result cache (X-Cache) and the
// tenant's query limits, and the SSE tail.
func (a *API) ConsoleRoutes(mux *http.ServeMux, guard func(http.Handler) http.Handler) {
	routes := map[string]http.HandlerFunc{
		"GET /console/api/dlq":                 a.dlqCounts,
		"GET /console/api/dlq/{table}":         a.dlqList,
		"POST /console/api/dlq/{table}/replay": a.dlqReplay,
		"DELETE /console/api/dlq/{table}":      a.dlqPurge,
		"POST /console/api/query":              a.read(a.deps.Query.ServeHTTPAccess, queryConfined),
		"GET /console/api/tables/{table}":      a.getTable,
	}
	if a.deps.Stream != nil {
		routes["GET /console/api/stream/{table}"] = func(w http.ResponseWriter, r *http.Request) { a.deps.Stream.ServeHTTP(w, r, a.tenant(r)) }
	}
	for pattern, h := range routes {
		mux.Handle(pattern, guard(requireTenant(h)))
	}
}

// requireTenant refuses a console data request that names no tenant.
func requireTenant(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("tenant") == "" {
			httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "auth.tenant_required", Message: "name the tenant with ?tenant="})
			return
		}
		h(w, r)
	}
}
