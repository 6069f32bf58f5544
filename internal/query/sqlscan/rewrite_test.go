package sqlscan

import (
	"errors"
	"strings"
	"testing"
)

// TestRewriteTables replaces every reference of a table, whatever its spelling and place, and
// moves FINAL into the replacement.
func TestRewriteTables(t *testing.T) {
	repl := func(r Ref) (string, bool) {
		if r.Table.Name != "t" {
			return "", false
		}
		s := "<t"
		if r.Final() {
			s += " final"
		}
		if r.Aliased {
			s += " aliased"
		}
		if r.In {
			s += " in"
		}
		return s + ">", true
	}
	for _, c := range []struct{ in, want string }{
		{"SELECT * FROM t", "SELECT * FROM <t>"},
		{"SELECT * FROM db.`t` AS x FINAL WHERE 1", "SELECT * FROM <t final aliased> AS x  WHERE 1"},
		{"SELECT * FROM t FINAL x", "SELECT * FROM <t final aliased>  x"},
		{"SELECT * FROM u, t JOIN (SELECT 1 FROM \"t\") USING a ARRAY JOIN t", "SELECT * FROM u, <t> JOIN (SELECT 1 FROM <t>) USING a ARRAY JOIN t"},
		{"SELECT a IN t, 'FROM t' FROM u -- FROM t", "SELECT a IN <t in>, 'FROM t' FROM u -- FROM t"},
		{"SELECT 1 FROM t UNION ALL SELECT 2 FROM t;", "SELECT 1 FROM <t> UNION ALL SELECT 2 FROM <t>;"},
	} {
		got, err := RewriteTables(c.in, repl)
		if err != nil || got != c.want {
			t.Errorf("RewriteTables(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"SELECT * FROM numbers(3), t", "SELECT dictGet('d', 'a', 1) FROM t", "SHOW TABLES", "SELECT * FROM {x:Identifier}", "SELECT 1; SELECT 2"} {
		if _, err := RewriteTables(in, repl); !errors.Is(err, ErrRejected) {
			t.Errorf("RewriteTables(%q): %v, want ErrRejected", in, err)
		}
	}
	if ids := strings.Join(Identifiers("SELECT `se cret`, a FROM t WHERE b = 'c' -- d"), ","); ids != "SELECT,se cret,a,FROM,t,WHERE,b" {
		t.Errorf("Identifiers: %s", ids)
	}
}
