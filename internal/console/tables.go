package console

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/store"
)

// tableRow is one table of the tables view.
type tableRow struct {
	Name    string   `json:"name"`
	Engine  string   `json:"engine,omitempty"`
	Columns []column `json:"columns"`
	// ActiveParts and PartsLastMinute come from the store's system.parts: the parts the table
	// reads now, and the level-0 parts (one per insert) written in the last 60 seconds.
	ActiveParts     uint64 `json:"active_parts"`
	PartsLastMinute uint64 `json:"parts_last_minute"`
	// LastPartAt is the newest part's modification time (unix ms; 0: none).
	LastPartAt int64 `json:"last_part_at"`
	// RowsPerSec and LastInsertAt are what this process inserted (its metrics).
	RowsPerSec   float64 `json:"rows_per_sec"`
	LastInsertAt int64   `json:"last_insert_at,omitempty"`
	DeadLetters  uint64  `json:"dlq_entries"`
}

type column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// tables answers GET /console/api/tables?tenant=: each table of the tenant's database with its
// schema, parts, rates and dead letters. A backend that fails leaves its fields empty and names
// itself in "errors", so the page shows what it has and says what is missing.
func (c *Console) tables(w http.ResponseWriter, r *http.Request) {
	tenant := auth.TenantFromContext(r.Context())
	if tenant == "" {
		httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "auth.tenant_required", Message: "name the tenant with ?tenant="})
		return
	}
	target, err := c.deps.Targets.Target(tenant)
	if err != nil {
		httpx.WriteError(w, httpx.Error{Status: http.StatusForbidden, Code: "tenant.unknown", Message: err.Error()})
		return
	}
	errs := map[string]string{}
	byName := map[string]*tableRow{}
	get := func(name string) *tableRow {
		t, ok := byName[name]
		if !ok {
			t = &tableRow{Name: name, Columns: []column{}}
			byName[name] = t
		}
		return t
	}
	if err := c.storeTables(r.Context(), target, get); err != nil {
		errs["store"] = err.Error()
	}
	if c.deps.DLQ != nil {
		counts, err := c.deps.DLQ.Counts(r.Context(), tenant)
		if err != nil {
			errs["dlq"] = err.Error()
		}
		for k, n := range counts {
			if k.Tenant == tenant {
				get(k.Table).DeadLetters = n
			}
		}
	}
	if s, err := c.stats.stats(); err != nil {
		errs["metrics"] = err.Error()
	} else {
		for name, t := range byName {
			t.RowsPerSec = round(s.TableRates[tenant+"/"+name])
			t.LastInsertAt = s.LastInsert[tenant+"/"+name]
		}
	}
	out := make([]*tableRow, 0, len(byName))
	for _, t := range byName {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"tenant": tenant, "database": target.Database, "tables": out, "errors": errs})
}

// storeTables reads the tenant database's tables, columns and parts.
func (c *Console) storeTables(ctx context.Context, target store.Target, get func(string) *tableRow) error {
	db, _ := json.Marshal(target.Database)
	params := []store.Param{{Name: "db", Value: db}}
	each := func(sql string, f func([]json.RawMessage)) error {
		rows, err := c.deps.Store.Query(ctx, target, store.Query{SQL: sql, Params: params, Limits: store.Limits{ReadOnly: true}})
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var vals []json.RawMessage
			if err := json.Unmarshal(rows.Row(), &vals); err != nil {
				return err
			}
			f(vals)
		}
		return rows.Err()
	}
	if err := each("SELECT name, engine FROM system.tables WHERE database = {db:String} ORDER BY name", func(v []json.RawMessage) {
		get(str(v[0])).Engine = str(v[1])
	}); err != nil {
		return err
	}
	if err := each("SELECT table, name, type FROM system.columns WHERE database = {db:String}", func(v []json.RawMessage) {
		t := get(str(v[0]))
		t.Columns = append(t.Columns, column{Name: str(v[1]), Type: str(v[2])})
	}); err != nil {
		return err
	}
	return each(`SELECT table, toString(countIf(active)), toString(countIf(level = 0 AND modification_time >= now() - 60)),
		toString(toUnixTimestamp(max(modification_time))) FROM system.parts WHERE database = {db:String} GROUP BY table`, func(v []json.RawMessage) {
		t := get(str(v[0]))
		t.ActiveParts = num(v[1])
		t.PartsLastMinute = num(v[2])
		t.LastPartAt = int64(num(v[3])) * 1000
	})
}

// str decodes a JSON string value ("" when it is not one).
func str(v json.RawMessage) string {
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

// num decodes an unsigned number sent as a JSON string.
func num(v json.RawMessage) uint64 {
	n, _ := strconv.ParseUint(str(v), 10, 64)
	return n
}
