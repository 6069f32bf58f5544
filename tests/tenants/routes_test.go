package tenants_test

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/auth"
)

// Where a route finds the tables it touches.
const (
	noTable     = iota // the route touches no one table (a listing filters instead)
	tableInPath        // {table} in the path
	tableInSQL         // the tables the SQL (or the pipe's SQL) reads
)

// specRoute is one row of the scopes-and-routes table of docs/tenants.md, with a concrete call
// the matrix makes: the table is always "events" and the pipe always "recent".
type specRoute struct {
	Pattern      string
	Scope        string // the scope a tenant key needs
	Table        int    // noTable, tableInPath or tableInSQL
	Ops          bool   // a /v1/ops/* route: the operator key may call it with ?tenant=
	OperatorOnly bool   // only the operator key may call it
	Path         string // the concrete path called
	Body         string // the request body, "" for none
	// ClickHouse marks the ClickHouse HTTP interface's routes (docs/clickhouse.md): the scope
	// comes from the statement (an INSERT needs ingest, anything else query, and a key with
	// neither is refused before the statement is read), and errors are in ClickHouse's form
	// (checkClickHouseError). A route may appear once per statement the matrix sends through it.
	ClickHouse bool
	// Basic sends the credential as the password of HTTP Basic, as ClickHouse clients do.
	Basic bool
	// JSONErrors asks for the gateway's JSON errors (Accept: application/json).
	JSONErrors bool
	// OtherDatabase marks a statement naming the other tenant's database ({otherdb} in Path and
	// Body): refused for every tenant credential that may otherwise run it.
	OtherDatabase bool
	// OtherCode is the error code of an OtherDatabase refusal.
	OtherCode string
	// Public marks a route that takes no credential: every caller gets its 2xx.
	Public bool
}

// specRoutes is written from docs/tenants.md, not derived from auth.Routes: a drift between the
// two fails TestRoutesMatchSpec.
var specRoutes = []specRoute{
	{Pattern: "POST /v1/ingest/{table}", Scope: "ingest", Table: tableInPath, Path: "/v1/ingest/events", Body: `{"id":"matrix","n":1}`},
	{Pattern: "POST /v1/query", Scope: "query", Table: tableInSQL, Path: "/v1/query", Body: `{"sql":"SELECT id FROM events","format":"ndjson"}`},
	{Pattern: "GET /v1/pipes", Scope: "query", Table: noTable, Path: "/v1/pipes"},
	{Pattern: "GET /v1/pipes/{name}", Scope: "query", Table: tableInSQL, Path: "/v1/pipes/recent"},
	{Pattern: "POST /v1/pipes/{name}", Scope: "query", Table: tableInSQL, Path: "/v1/pipes/recent", Body: `{}`},
	{Pattern: "GET /v1/stream/{table}", Scope: "stream", Table: tableInPath, Path: "/v1/stream/events"},
	{Pattern: "GET /v1/tables", Scope: "query", Table: noTable, Path: "/v1/tables"},
	{Pattern: "GET /v1/tables/{table}", Scope: "query", Table: tableInPath, Path: "/v1/tables/events"},
	{Pattern: "POST /v1/ops/sql", Scope: "admin", Table: noTable, Ops: true, Path: "/v1/ops/sql", Body: `{"sql":"SELECT 1"}`},
	{Pattern: "GET /v1/ops/dlq", Scope: "admin", Table: noTable, Ops: true, Path: "/v1/ops/dlq"},
	{Pattern: "GET /v1/ops/dlq/{table}", Scope: "admin", Table: tableInPath, Ops: true, Path: "/v1/ops/dlq/events"},
	{Pattern: "POST /v1/ops/dlq/{table}/replay", Scope: "admin", Table: tableInPath, Ops: true, Path: "/v1/ops/dlq/events/replay?dry_run=true"},
	{Pattern: "DELETE /v1/ops/dlq/{table}", Scope: "admin", Table: tableInPath, Ops: true, Path: "/v1/ops/dlq/events"},
	{Pattern: "POST /v1/ops/settings/reload", Scope: "admin", Ops: true, OperatorOnly: true, Path: "/v1/ops/settings/reload"},
	{Pattern: "POST /{$}", Scope: "ingest", Table: tableInSQL, ClickHouse: true,
		Path: "/?query=INSERT+INTO+events+FORMAT+JSONEachRow", Body: `{"id":"matrix","n":1}`},
	{Pattern: "POST /{$}", Scope: "ingest", Table: tableInSQL, ClickHouse: true, Basic: true, JSONErrors: true,
		Path: "/", Body: "INSERT INTO events (id, n) FORMAT CSV\nmatrix,2\n"},
	{Pattern: "POST /{$}", Scope: "ingest", Table: tableInSQL, ClickHouse: true, OtherDatabase: true, OtherCode: "database.not_allowed",
		Path: "/?query=INSERT+INTO+{otherdb}.events+FORMAT+JSONEachRow", Body: `{"id":"matrix","n":1}`},
	{Pattern: "GET /{$}", Scope: "query", Table: tableInSQL, ClickHouse: true,
		Path: "/?query=SELECT+id+FROM+events+FORMAT+JSONEachRow"},
	{Pattern: "POST /{$}", Scope: "query", Table: tableInSQL, ClickHouse: true, Basic: true,
		Path: "/?default_format=JSONEachRow", Body: "SELECT id FROM events"},
	{Pattern: "GET /{$}", Scope: "query", Table: tableInSQL, ClickHouse: true, JSONErrors: true,
		Path: "/?query=SELECT+id+FROM+events"},
	{Pattern: "POST /{$}", Scope: "query", Table: tableInSQL, ClickHouse: true, OtherDatabase: true, OtherCode: "auth.table_not_allowed",
		Path: "/", Body: "SELECT id FROM {otherdb}.events"},
	{Pattern: "GET /ping", Path: "/ping", ClickHouse: true, Public: true},
}

// method returns the HTTP method of the route.
func (r specRoute) method() string {
	m, _, _ := strings.Cut(r.Pattern, " ")
	return m
}

// TestRoutesMatchSpec requires auth.Routes (what the gateway enforces) and the documented table
// the matrix tests to list the same routes with the same scope, table check and operator rules,
// so that a new route cannot escape the isolation matrix.
func TestRoutesMatchSpec(t *testing.T) {
	t.Parallel()
	rules := auth.Routes()
	var got, want []string
	for p := range rules {
		got = append(got, p)
	}
	for _, r := range specRoutes {
		want = append(want, r.Pattern)
	}
	sort.Strings(got)
	sort.Strings(want)
	want = slices.Compact(want)
	if !slices.Equal(got, want) {
		t.Fatalf("auth.Routes() has %q,\nthe isolation matrix (docs/tenants.md) has %q: add the new route to both", got, want)
	}
	for _, r := range specRoutes {
		rule := rules[r.Pattern]
		scope := r.Scope
		if r.ClickHouse {
			scope = "" // the handler checks the statement's scope
		}
		if string(rule.Scope) != scope || rule.Ops != r.Ops || rule.OperatorOnly != r.OperatorOnly || (rule.TableParam != "") != (r.Table == tableInPath) ||
			rule.ClickHouse != (r.ClickHouse && !r.Public) || rule.Public != r.Public {
			t.Errorf("route %s: auth rule %+v, docs/tenants.md says scope %s, table check %d, ops %t, operator only %t",
				r.Pattern, rule, r.Scope, r.Table, r.Ops, r.OperatorOnly)
		}
	}
}
