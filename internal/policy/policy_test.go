package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
)

func columns(t *testing.T, spec ...string) []store.Column {
	t.Helper()
	var out []store.Column
	for i := 0; i < len(spec); i += 2 {
		typ, err := chtype.Parse(spec[i+1])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, store.Column{Name: spec[i], TypeName: spec[i+1], Type: typ})
	}
	return out
}

func orders(t *testing.T) []store.Column {
	return columns(t, "id", "String", "owner", "String", "region", "Nullable(String)", "secret", "String", "n", "UInt64")
}

func bind(t *testing.T, tp *Table, claims Claims) *Bound {
	t.Helper()
	b, err := tp.Bind("orders", orders(t), claims)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustFilter(t *testing.T, src string) *Filter {
	t.Helper()
	f, err := ParseFilter(src)
	if err != nil {
		t.Fatalf("ParseFilter(%q): %v", src, err)
	}
	return f
}

func TestParseFilterRefuses(t *testing.T) {
	for _, src := range []string{
		"", "owner", "owner =", "owner = {claim:}", "owner = {sub}", "owner IN 'a'", "owner = 'a' AND",
		"(owner = 'a'", "owner < 3", "owner = 'a'; DROP TABLE x", "owner = 'unterminated", "sleep(3) = 1",
	} {
		if _, err := ParseFilter(src); err == nil {
			t.Errorf("ParseFilter(%q) accepted", src)
		}
	}
}

func TestMatchIsThreeValued(t *testing.T) {
	f := mustFilter(t, "owner = {claim:sub} AND (region IN {claim:regions} OR n = 7) AND NOT region = 'mars'")
	b := bind(t, &Table{Filter: f}, Claims{"sub": "alice", "regions": []any{"eu", "us"}})
	row := func(vals map[string]string) func(string) (json.RawMessage, bool) {
		return func(c string) (json.RawMessage, bool) {
			v, ok := vals[c]
			return json.RawMessage(v), ok
		}
	}
	for _, c := range []struct {
		vals map[string]string
		want bool
	}{
		{map[string]string{"owner": `"alice"`, "region": `"eu"`, "n": "1"}, true},
		{map[string]string{"owner": `"alice"`, "region": `"asia"`, "n": "7"}, true},
		{map[string]string{"owner": `"bob"`, "region": `"eu"`, "n": "1"}, false},
		{map[string]string{"owner": `"alice"`, "region": `"asia"`, "n": "1"}, false},
		{map[string]string{"owner": `"alice"`, "region": `"mars"`, "n": "7"}, false},
		// NULL region: IN is unknown, so the OR needs n = 7, and NOT (NULL = 'mars') stays unknown.
		{map[string]string{"owner": `"alice"`, "region": `null`, "n": "7"}, false},
		{map[string]string{"region": `"eu"`, "n": "1"}, false}, // no owner: unknown
	} {
		if got := b.Match(row(c.vals)); got != c.want {
			t.Errorf("Match(%v) = %t, want %t", c.vals, got, c.want)
		}
	}
}

func TestBindErrors(t *testing.T) {
	f := mustFilter(t, "owner = {claim:sub}")
	if _, err := (&Table{Filter: f}).Bind("orders", orders(t), Claims{}); !errors.Is(err, ErrMissingClaim) {
		t.Errorf("no sub: %v, want ErrMissingClaim", err)
	}
	if _, err := (&Table{Filter: mustFilter(t, "n = {claim:sub}")}).Bind("orders", orders(t), Claims{"sub": "alice"}); !errors.Is(err, ErrClaimType) {
		t.Errorf("a string claim against UInt64: %v, want ErrClaimType", err)
	}
	if _, err := (&Table{Filter: mustFilter(t, "nope = 1")}).Bind("orders", orders(t), Claims{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("an unknown column: %v, want ErrInvalid", err)
	}
	if _, err := (&Table{DenyColumns: []string{"nope"}}).Bind("orders", orders(t), Claims{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("an unknown denied column: %v, want ErrInvalid", err)
	}
}

// TestRewrite checks the text a query becomes: every reference, at any depth, reads the
// subquery with the claim as a parameter, never spliced into the SQL.
func TestRewrite(t *testing.T) {
	tp := &Table{DenyColumns: []string{"secret"}, Filter: mustFilter(t, "owner = {claim:sub}")}
	resolve := func(table string) (*Bound, bool, error) {
		if table != "orders" {
			return nil, false, nil
		}
		b, err := tp.Bind(table, orders(t), Claims{"sub": "x' OR 1=1 --"})
		return b, err == nil, err
	}
	sub := "(SELECT `id`, `owner`, `region`, `n` FROM `db`.`orders` WHERE (`owner` = {_wh_policy_0_0:String}))"
	for _, c := range []struct{ in, want string }{
		{"SELECT id FROM orders", "SELECT id FROM " + sub + " AS `orders`"},
		{"SELECT id FROM db.orders o", "SELECT id FROM " + sub + " o"},
		{"SELECT id FROM orders FINAL", "SELECT id FROM " + strings.Replace(sub, "`orders`", "`orders` FINAL", 1) + " AS `orders` "},
		{"SELECT id FROM other", "SELECT id FROM other"},
		{"SELECT 1 IN orders", "SELECT 1 IN " + sub},
		{"SELECT * FROM (SELECT * FROM orders) UNION ALL SELECT * FROM other JOIN orders USING id",
			"SELECT * FROM (SELECT * FROM " + sub + " AS `orders`) UNION ALL SELECT * FROM other JOIN " +
				strings.ReplaceAll(sub, "_0_0", "_1_0") + " AS `orders` USING id"},
	} {
		got, params, err := Rewrite(c.in, "db", resolve)
		if err != nil {
			t.Errorf("Rewrite(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("Rewrite(%q)\n got %s\nwant %s", c.in, got, c.want)
		}
		for _, p := range params {
			if string(p.Value) != `"x' OR 1=1 --"` {
				t.Errorf("Rewrite(%q): parameter %s = %s, want the claim as a JSON string", c.in, p.Name, p.Value)
			}
		}
		if strings.Contains(got, "1=1") {
			t.Errorf("Rewrite(%q) spliced the claim into the SQL: %s", c.in, got)
		}
	}
	for _, in := range []string{"SELECT secret FROM orders", "SELECT `secret` FROM other, orders"} {
		if _, _, err := Rewrite(in, "db", resolve); !errors.Is(err, ErrColumnDenied) {
			t.Errorf("Rewrite(%q): %v, want ErrColumnDenied", in, err)
		}
	}
	for _, in := range []string{"SELECT * FROM numbers(1), orders", "SELECT * FROM view(SELECT * FROM orders)", "SELECT * FROM {t:Identifier}", "DESCRIBE orders"} {
		if _, _, err := Rewrite(in, "db", resolve); err == nil {
			t.Errorf("Rewrite(%q) accepted a query whose tables are not certain", in)
		}
	}
}
