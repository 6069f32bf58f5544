package api

import (
	"encoding/json"
	"net/http"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/store"
)

// columnView is a column as WaveHouse sees it.
type columnView struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Default    string `json:"default_kind,omitempty"`
	Expression string `json:"default_expression,omitempty"`
	Writable   bool   `json:"writable"`
	Required   bool   `json:"required"`
	Nullable   bool   `json:"nullable"`
	Supported  bool   `json:"supported"`
}

func (a *API) getTable(w http.ResponseWriter, r *http.Request) {
	table := r.PathValue("table")
	target, ok := a.target(w, a.tenant(r))
	if !ok {
		return
	}
	cols, err := a.deps.Schema.Refresh(r.Context(), target, table)
	if err != nil {
		a.storeError(w, err, table)
		return
	}
	p, _ := auth.FromContext(r.Context())
	pol := p.Policy(table)
	out := make([]columnView, 0, len(cols))
	for _, c := range cols {
		if pol != nil && !pol.Reads(c.Name) {
			continue // a column the token's role may not read is not shown either
		}
		out = append(out, columnView{Name: c.Name, Type: c.TypeName, Default: string(c.DefaultKind), Expression: c.DefaultExpr,
			Writable: c.Writable(), Required: c.Required(), Nullable: c.Nullable(), Supported: c.Type != nil && c.Type.Supported()})
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"name": table, "database": target.Database, "columns": out})
}

func (a *API) listTables(w http.ResponseWriter, r *http.Request) {
	target, ok := a.target(w, a.tenant(r))
	if !ok {
		return
	}
	db, _ := json.Marshal(target.Database)
	rows, err := a.deps.Store.Query(r.Context(), target, store.Query{
		SQL:    "SELECT name, engine FROM system.tables WHERE database = {db:String} ORDER BY name",
		Params: []store.Param{{Name: "db", Value: db}},
		Limits: store.Limits{ReadOnly: true},
	})
	if err != nil {
		a.storeError(w, err, "")
		return
	}
	defer rows.Close()
	type tableView struct {
		Name   string `json:"name"`
		Engine string `json:"engine"`
	}
	tables := []tableView{}
	p, _ := auth.FromContext(r.Context())
	for rows.Next() {
		var pair [2]string
		if err := json.Unmarshal(rows.Row(), &pair); err != nil {
			httpx.WriteError(w, httpx.Error{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()})
			return
		}
		if p.AllowsTable(pair[0]) { // a key restricted to tables sees only those
			tables = append(tables, tableView{Name: pair[0], Engine: pair[1]})
		}
	}
	if err := rows.Err(); err != nil {
		a.storeError(w, err, "")
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"database": target.Database, "tables": tables})
}
