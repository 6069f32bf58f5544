package tenants_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/wavehouse/wavehouse/internal/policy"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// policyRoles are the roles of TestPolicies (docs/jwt.md#policies).
const policyRoles = `    customer:
      scopes: [ingest, query, stream]
      tables: [orders]
      policies:
        orders:
          deny_columns: [secret]
          filter: "owner = {claim:sub}"
          set: {owner: "{claim:sub}"}
    checked:
      scopes: [ingest]
      tables: [orders]
      policies:
        orders: {filter: "owner = {claim:sub} AND region IN {claim:regions}"}
    tiny:
      scopes: [query]
      tables: [orders]
      max_rows: 1
      policies:
        orders: {columns: [id, owner], filter: "owner = {claim:sub}"}
`

const ordersDDL = "CREATE TABLE orders (id String, owner String DEFAULT '', region String DEFAULT '', secret String DEFAULT '', tags Array(String) DEFAULT []) ENGINE = ReplacingMergeTree() ORDER BY id"

// Markers of bob's data: no answer to alice may hold one.
const (
	bobMarker    = "bob-row"
	secretMarker = "s3cr3t"
)

// escapes are SQL written to read around alice's row filter or column list. Each must either
// answer 200 with none of bob's rows and no secret, or be refused with a 4xx, never leaking.
var escapes = []string{
	"SELECT id FROM orders",
	"SELECT * FROM orders",
	"SELECT id FROM (SELECT * FROM orders)",
	"SELECT id FROM (SELECT id FROM (SELECT id, owner FROM orders) WHERE owner != 'alice')",
	"SELECT id FROM orders WHERE owner = 'bob'",
	"SELECT id FROM orders WHERE owner = 'bob' UNION ALL SELECT id FROM orders",
	"SELECT id FROM orders UNION ALL SELECT id FROM other",
	"SELECT id FROM orders FINAL",
	"SELECT id FROM orders AS o FINAL WHERE o.owner != 'alice'",
	"SELECT id, t FROM orders ARRAY JOIN tags AS t",
	"SELECT arrayJoin(groupArray(id)) AS id FROM orders",
	"SELECT id FROM orders AS o JOIN orders AS p USING id",
	"SELECT id FROM orders WHERE id IN (SELECT id FROM orders WHERE owner = 'bob')",
	"SELECT toString((concat('bob', '-row-1'), 'bob', 'eu', ['z']) IN orders) AS id",
	"SELECT id FROM `orders`",
	"SELECT id FROM tenant_p.orders",
	"SELECT id FROM merge(currentDatabase(), '^orders$')",
	"SELECT id FROM numbers(1), orders",
	"SELECT id FROM view(SELECT * FROM orders)",
	"SELECT id FROM remote('127.0.0.1', currentDatabase(), 'orders')",
	"SELECT id FROM cluster('default', currentDatabase(), 'orders')",
	"SELECT id FROM input('id String')",
	"SELECT query AS id FROM system.query_log",
	"SELECT name AS id FROM system.columns",
	"SELECT dictGet('d', 'id', 1) AS id",
	"SELECT id FROM orders SETTINGS readonly = 0",
	"SELECT id FROM orders SETTINGS enable_optimize_predicate_expression = 1",
	"SELECT id FROM (SELECT id FROM orders SETTINGS max_result_rows = 0)",
	"SELECT id FROM orders SETTINGS additional_table_filters = {'orders': 'owner = owner'}",
	"SELECT count() AS id FROM orders WHERE throwIf(owner = 'bob')",
	"SELECT id FROM orders WHERE throwIf(owner = 'bob') = 0",
	"SELECT id FROM orders PREWHERE owner = 'bob'",
	"SELECT id FROM orders SAMPLE 1",
	"SELECT secret AS id FROM orders",
	"SELECT `secret` AS id FROM orders",
	"SELECT groupArray(secret) AS id FROM orders",
	"SELECT COLUMNS('sec') FROM orders",
	"SELECT id FROM orders WHERE secret != ''",
	"SELECT id FROM orders; SELECT id FROM orders",
	"WITH (SELECT groupArray(id) FROM orders) AS ids SELECT arrayJoin(ids) AS id",
	"SELECT id FROM orders LIMIT 1 BY owner",
}

// TestPolicies checks end-user row and column policies over the binary, on chDB and on
// ClickHouse 18.16 (whose query path binds parameters and settings differently): a token reads
// and streams only the rows its claims select and never a denied column, whatever SQL it sends;
// inserts take forced values and a row breaking the filter is refused; each denial has a stable
// code and leaks nothing.
func TestPolicies(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"chdb", "clickhouse"} {
		t.Run(backend, func(t *testing.T) {
			o := gatewayOptions{}
			if backend == "clickhouse" {
				ch := testsvc.ClickHouseServer(t)
				db := ch.CreateDatabase(t, "whpol")
				o.Store = fmt.Sprintf("store:\n  backend: clickhouse\n  clickhouse:\n    addrs: [%q]\n    database: %s\n", ch.NativeAddr, db)
			}
			checkPolicies(t, o)
		})
	}
}

func checkPolicies(t *testing.T, o gatewayOptions) {
	tn := &tenant{Name: "p", Database: "tenant_p", Pipes: map[string]string{"mine": "-- @tables orders\nSELECT id, owner FROM orders ORDER BY id\n"}}
	for _, s := range []string{"ingest", "query", "admin"} {
		tn.Keys = append(tn.Keys, newKey(t, "p", s, s, ""))
	}
	is := withHS256Roles(t, tn, policyRoles)
	g := startGateway(t, o, tn)
	g.sql(t, tn.key(t, "admin").Token, "", ordersDDL)
	g.sql(t, tn.key(t, "admin").Token, "", otherDDL)
	seed := `[{"id":"a1","owner":"alice","region":"eu","secret":"s3cr3t-a1","tags":["x","y"]},
{"id":"a2","owner":"alice","region":"us","secret":"s3cr3t-a2","tags":[]},
{"id":"bob-row-1","owner":"bob","region":"eu","secret":"s3cr3t-b1","tags":["z"]}]`
	if r := g.ingest(t, tn.key(t, "ingest").Token, "orders", "wait=committed", seed); r.Status != http.StatusOK {
		t.Fatalf("seeding orders: %s", r)
	}
	if r := g.ingest(t, tn.key(t, "ingest").Token, "other", "wait=committed", `{"id":"bob-row-other"}`); r.Status != http.StatusOK {
		t.Fatalf("seeding other: %s", r)
	}
	as := func(role, sub string, edit func(jwt.MapClaims)) string {
		return is.sign(t, is.claims(role, func(c jwt.MapClaims) {
			c["sub"] = sub
			if edit != nil {
				edit(c)
			}
		}))
	}
	alice, bob := as("customer", "alice", nil), as("customer", "bob", nil)

	t.Run("escapes", func(t *testing.T) {
		for _, sql := range escapes {
			r := g.query(t, alice, sql)
			body := string(r.Body)
			if strings.Contains(body, bobMarker) || strings.Contains(body, secretMarker) {
				t.Errorf("%q as alice leaked bob's rows or a secret: %s", sql, r)
				continue
			}
			if !r.OK() && (r.Status < 400 || r.Status >= 500 || r.Code() == "") {
				t.Errorf("%q as alice: %s, want 200 without bob's rows or a 4xx with a code", sql, r)
			}
			t.Logf("%-90q → %d %s", sql, r.Status, r.Code())
		}
		if got := g.ids(t, alice, "SELECT id FROM orders ORDER BY id"); !slices.Equal(got, []string{"a1", "a2"}) {
			t.Errorf("alice's orders: %q, want a1 a2", got)
		}
		if got := g.ids(t, alice, "SELECT toString(count()) AS id FROM orders WHERE throwIf(owner = 'bob') = 0"); !slices.Equal(got, []string{"2"}) {
			t.Errorf("alice's throwIf probe of bob's rows: %q, want the count of her own rows (2) and no error", got)
		}
		// Membership probes of bob's row answer 0 or are refused, never 1.
		for _, sql := range []string{
			"SELECT toString((concat('bob', '-row-1'), 'bob', 'eu', ['z']) IN orders) AS id",
			"SELECT toString((concat('bob', '-row-1'), 'bob', 'eu', ['z']) IN (orders)) AS id",
			"SELECT toString(concat('bob', '-row-1') IN (SELECT id FROM orders)) AS id",
			"SELECT toString(concat('bob', '-row-1') GLOBAL IN (SELECT id FROM orders)) AS id",
			"SELECT toString(count()) AS id FROM orders WHERE concat('bob', '-row-1') IN (SELECT id FROM orders)",
		} {
			if r := g.query(t, alice, sql); r.OK() && !slices.Equal(idsOf(t, r.Body), []string{"0"}) {
				t.Errorf("alice's membership probe %q of bob's row: %s, want 0 or a refusal", sql, r)
			}
		}
		for _, sql := range []string{"SELECT secret AS id FROM orders", "SELECT id FROM orders WHERE secret != ''"} {
			if r := g.query(t, alice, sql); r.Status != http.StatusForbidden || r.Code() != "policy.column_denied" {
				t.Errorf("%q as alice: %s, want 403 policy.column_denied", sql, r)
			}
		}
		if r := g.query(t, alice, "SELECT * FROM orders"); strings.Contains(string(r.Body), `"secret"`) {
			t.Errorf("SELECT * as alice returned the denied column: %s", r)
		}
		if r := g.do(t, http.MethodGet, "/v1/tables/orders", alice, nil); !r.OK() || strings.Contains(string(r.Body), `"secret"`) || !strings.Contains(string(r.Body), `"owner"`) {
			t.Errorf("GET /v1/tables/orders as alice: %s, want its columns without the denied one", r)
		}
		b, _ := json.Marshal(map[string]any{"sql": "SELECT id FROM orders WHERE owner = {_wh_policy_0_0:String}", "params": map[string]string{"_wh_policy_0_0": "bob"}})
		if r := g.do(t, http.MethodPost, "/v1/query", alice, b); r.Status != http.StatusBadRequest || strings.Contains(string(r.Body), bobMarker) {
			t.Errorf("a query binding the policy's reserved parameter: %s, want 400", r)
		}
	})
	t.Run("describe", func(t *testing.T) {
		// The ClickHouse interface's DESCRIBE (what clickhouse-go's PrepareBatch sends) lists the
		// columns alice may read, in the seven-column layout on both stores; /v1/query's is refused.
		r := g.do(t, http.MethodPost, "/", alice, []byte("DESCRIBE TABLE orders FORMAT TSV"))
		var names []string
		for line := range strings.Lines(string(r.Body)) {
			f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
			if len(f) != 7 {
				t.Errorf("DESCRIBE row %q has %d columns, want 7", line, len(f))
			}
			names = append(names, f[0])
		}
		if r.Status != http.StatusOK || !slices.Equal(names, []string{"id", "owner", "region", "tags"}) {
			t.Errorf("DESCRIBE TABLE orders as alice on the ClickHouse interface: %s, want id owner region tags (not secret)", r)
		}
		if r := g.do(t, http.MethodPost, "/", alice, []byte("DESCRIBE TABLE other")); r.Status != http.StatusForbidden || strings.Contains(string(r.Body), "bob") {
			t.Errorf("DESCRIBE TABLE other (outside alice's role) on the ClickHouse interface: %s, want 403", r)
		}
		if r := g.query(t, alice, "DESCRIBE TABLE orders"); r.Status != http.StatusBadRequest || strings.Contains(string(r.Body), "secret") {
			t.Errorf("DESCRIBE on /v1/query as alice: %s, want 400 (refused under a row policy)", r)
		}
	})
	t.Run("cache per claims", func(t *testing.T) {
		// The same SQL text as alice then bob, twice each: a cache key without the bound claims
		// would hand bob alice's result.
		for range 2 {
			if got := g.ids(t, alice, "SELECT id FROM orders ORDER BY id"); !slices.Equal(got, []string{"a1", "a2"}) {
				t.Errorf("alice: %q", got)
			}
			if got := g.ids(t, bob, "SELECT id FROM orders ORDER BY id"); !slices.Equal(got, []string{"bob-row-1"}) {
				t.Errorf("bob: %q, want only his row", got)
			}
		}
	})
	t.Run("pipe", func(t *testing.T) {
		r := g.do(t, http.MethodGet, "/v1/pipes/mine?format=ndjson", alice, nil)
		if got := idsOf(t, r.Body); r.Status != http.StatusOK || !slices.Equal(got, []string{"a1", "a2"}) {
			t.Errorf("pipe mine as alice: %s, want a1 a2", r)
		}
	})
	t.Run("limits and claims", func(t *testing.T) {
		if r := g.query(t, as("tiny", "alice", nil), "SELECT id FROM orders"); r.Status != http.StatusUnprocessableEntity || r.Code() != "query.limit_exceeded" {
			t.Errorf("tiny role (max_rows 1) reading 2 rows: %s, want 422 query.limit_exceeded", r)
		}
		if r := g.query(t, as("tiny", "alice", nil), "SELECT region AS id FROM orders"); r.Status != http.StatusForbidden || r.Code() != "policy.column_denied" {
			t.Errorf("tiny role reading a column outside its list: %s, want 403 policy.column_denied", r)
		}
		nosub := is.sign(t, is.claims("customer", func(c jwt.MapClaims) { delete(c, "sub") }))
		if r := g.query(t, nosub, "SELECT id FROM orders"); r.Status != http.StatusForbidden || r.Code() != "policy.missing_claim" || strings.Contains(string(r.Body), "a1") {
			t.Errorf("a token without sub: %s, want 403 policy.missing_claim", r)
		}
	})
	t.Run("insert checks", func(t *testing.T) {
		// The same policy on every insert route: /v1/ingest, and the ClickHouse interface with
		// the token as Bearer and as the Basic password (docs/clickhouse.md#credentials).
		for i, ir := range insertRoutes {
			id := func(base string) string { return fmt.Sprintf("%s-%d", base, i) }
			if r := ir.insert(t, g, alice, "orders", "wait=committed", fmt.Sprintf(`{"id":%q,"region":"eu"}`, id("a3"))); r.Status != http.StatusOK {
				t.Fatalf("alice inserting a row without owner through %s: %s, want 200 (owner forced from sub)", ir.Name, r)
			}
			if got := g.ids(t, tn.key(t, "query").Token, "SELECT id FROM orders WHERE owner = 'alice' AND id = '"+id("a3")+"'"); !slices.Equal(got, []string{id("a3")}) {
				t.Errorf("alice's row inserted through %s: %q, want %s owned by alice", ir.Name, got, id("a3"))
			}
			two := fmt.Sprintf("{\"id\":%q}\n{\"id\":%q,\"owner\":\"bob\"}", id("a4"), id("a5"))
			ir.checkRowRefused(t, ir.insert(t, g, alice, "orders", "", two), "alice inserting a second row owned by bob", 1, policy.RowForcedColumn, "owner")
			checked := as("checked", "alice", func(c jwt.MapClaims) { c["regions"] = []string{"eu"} })
			ir.checkRowRefused(t, ir.insert(t, g, checked, "orders", "", fmt.Sprintf(`{"id":%q,"owner":"alice","region":"us"}`, id("c1"))), "a row outside the role's regions", 0, policy.RowViolation, "")
			ir.checkRowRefused(t, ir.insert(t, g, checked, "orders", "", fmt.Sprintf(`{"id":%q,"region":"eu"}`, id("c2"))), "a row leaving owner to its default", 0, policy.RowViolation, "")
			if r := ir.insert(t, g, checked, "orders", "", fmt.Sprintf(`{"id":%q,"owner":"alice","region":"eu"}`, id("c3"))); r.Status != ir.accepted() {
				t.Errorf("a row passing the checked role's filter through %s: %s, want %d", ir.Name, r, ir.accepted())
			}
			noRegions := as("checked", "alice", nil)
			if r := ir.insert(t, g, noRegions, "orders", "", fmt.Sprintf(`{"id":%q,"owner":"alice","region":"eu"}`, id("c4"))); r.Status != http.StatusForbidden || ir.code(r) != "policy.missing_claim" {
				t.Errorf("a token without the regions claim inserting through %s: %s, want 403 policy.missing_claim", ir.Name, r)
			}
		}
		// Nothing refused was stored, whichever route refused it.
		if got := g.ids(t, tn.key(t, "query").Token, "SELECT id FROM orders WHERE match(id, '^(a4|a5|c1|c2|c4)-')"); len(got) != 0 {
			t.Errorf("refused rows were stored: %q", got)
		}
	})
	t.Run("stream", func(t *testing.T) {
		s := g.openStream(t, "", "orders?token="+alice)
		if s.Status != http.StatusOK {
			t.Fatalf("alice's stream: %d", s.Status)
		}
		if r := g.ingest(t, tn.key(t, "ingest").Token, "orders", "", `{"id":"bob-row-live","owner":"bob","secret":"s3cr3t-live"}`); !r.OK() {
			t.Fatalf("ingest bob's live row: %s", r)
		}
		if r := g.ingest(t, alice, "orders", "", `{"id":"a-live"}`); !r.OK() {
			t.Fatalf("ingest alice's live row: %s", r)
		}
		s.waitFor(t, "alice's live row on her stream", "a-live")
		if txt := s.text(); !strings.Contains(txt, `"a1"`) || strings.Contains(txt, bobMarker) || strings.Contains(txt, "secret") {
			t.Errorf("alice's stream: want her rows (history and live) without bob's rows or the secret column:\n%s", txt)
		}
		s.close()
		for _, q := range []string{"columns=id,secret", "where.secret=s3cr3t-b1"} {
			r := g.do(t, http.MethodGet, "/v1/stream/orders?"+q, alice, nil)
			if r.Status != http.StatusForbidden || r.Code() != "policy.column_denied" {
				t.Errorf("alice's stream with ?%s: %s, want 403 policy.column_denied", q, r)
			}
		}
	})
	t.Run("idempotency keys per end user", func(t *testing.T) {
		// The same key and body from two users: the body names no owner (it is forced from sub),
		// so only a keyspace per user keeps bob from getting alice's recorded answer (a replay)
		// instead of his row being stored.
		body, key := `{"id":"same-key-row","region":"eu"}`, []string{"Idempotency-Key", "policy-same-key"}
		for i, c := range []struct {
			who, token string
			replayed   bool
		}{{"alice", alice, false}, {"bob", bob, false}, {"alice again", alice, true}} {
			r := g.ingest(t, c.token, "orders", "wait=committed", body, key...)
			if r.Status != http.StatusOK || (r.Header.Get("Idempotent-Replayed") == "true") != c.replayed {
				t.Errorf("keyed insert %d by %s: %s (Idempotent-Replayed %q), want 200 replayed=%v", i, c.who, r, r.Header.Get("Idempotent-Replayed"), c.replayed)
			}
		}
		got := g.ids(t, tn.key(t, "query").Token, "SELECT DISTINCT owner AS id FROM (SELECT id AS row_id, owner FROM orders) WHERE row_id = 'same-key-row' ORDER BY id")
		if len(got) == 0 || !slices.Contains([]string{"alice", "bob"}, got[len(got)-1]) {
			t.Errorf("owners of the keyed row: %q, want alice's and bob's rows (ReplacingMergeTree may have kept one)", got)
		}
	})
}
