package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/sqlbind"
)

// Errors of binding and applying a policy. Callers map them with [HTTPError].
var (
	// ErrColumnDenied refuses a request naming a column its role may not read.
	ErrColumnDenied = errors.New("policy: column denied")
	// ErrMissingClaim refuses a token without a claim its role's policy reads.
	ErrMissingClaim = errors.New("policy: missing claim")
	// ErrClaimType refuses a token whose claim does not fit the column it is compared with.
	ErrClaimType = errors.New("policy: claim does not fit the column")
	// ErrInvalid is a policy that does not fit its table (a column it names does not exist).
	ErrInvalid = errors.New("policy: does not fit the table")
)

// Table is a role's policy on one table, as the settings directory gives it.
type Table struct {
	// Columns, when not empty, are the only columns the role reads.
	Columns []string
	// DenyColumns are columns the role never reads.
	DenyColumns []string
	// Filter, when not nil, is the condition every row the role reads or inserts must meet.
	Filter *Filter
	// Set maps a column to the claim whose value every inserted row takes there.
	Set map[string]string
}

// Reads reports whether the role reads column col by its column lists (the filter aside).
func (t *Table) Reads(col string) bool {
	return (len(t.Columns) == 0 || slices.Contains(t.Columns, col)) && !slices.Contains(t.DenyColumns, col)
}

// Claims are a verified token's claims, as decoded JSON.
type Claims map[string]any

// Bound is a Table bound to one token's claims and the table's columns: what one request may
// read and insert. It is immutable and safe for concurrent use.
type Bound struct {
	table   string
	all     []string // every column, table order
	visible []string // readable columns, table order
	cond    *bnode   // nil: every row
	forced  map[string]json.RawMessage
}

// bnode is a filter node with its values canonical for the column's type.
type bnode struct {
	op   string
	kids []*bnode
	col  string
	typ  string   // the column's type name
	val  []byte   // canonical scalar (=, !=)
	arr  []byte   // canonical array (in, not in)
	set  [][]byte // arr's elements
}

// Bind binds t to claims for table, whose columns are cols.
func (t *Table) Bind(table string, cols []store.Column, claims Claims) (*Bound, error) {
	b := &Bound{table: table, forced: map[string]json.RawMessage{}}
	types := make(map[string]*store.Column, len(cols))
	for i := range cols {
		c := &cols[i]
		types[c.Name] = c
		b.all = append(b.all, c.Name)
		if t.Reads(c.Name) {
			b.visible = append(b.visible, c.Name)
		}
	}
	for _, c := range slices.Concat(t.Columns, t.DenyColumns) {
		if types[c] == nil {
			return nil, fmt.Errorf("%w: table %s has no column %s", ErrInvalid, table, c)
		}
	}
	if t.Filter != nil {
		cond, err := bindNode(t.Filter.root, table, types, claims)
		if err != nil {
			return nil, err
		}
		b.cond = cond
	}
	for col, claim := range t.Set {
		c := types[col]
		if c == nil {
			return nil, fmt.Errorf("%w: table %s has no column %s", ErrInvalid, table, col)
		}
		v, err := claimValue(claims, claim, c.Type, c.Name)
		if err != nil {
			return nil, err
		}
		b.forced[col] = v
	}
	return b, nil
}

func bindNode(n *node, table string, types map[string]*store.Column, claims Claims) (*bnode, error) {
	out := &bnode{op: n.op, col: n.col}
	for _, k := range n.kids {
		bk, err := bindNode(k, table, types, claims)
		if err != nil {
			return nil, err
		}
		out.kids = append(out.kids, bk)
	}
	if n.col == "" {
		return out, nil
	}
	c := types[n.col]
	if c == nil || c.Type == nil {
		return nil, fmt.Errorf("%w: the filter of table %s names column %s, which it does not have", ErrInvalid, table, n.col)
	}
	out.typ = c.Type.Name
	if n.op == "in" || n.op == "not in" {
		at, err := chtype.Parse("Array(" + c.Type.Name + ")")
		if err != nil {
			return nil, fmt.Errorf("%w: column %s: %w", ErrInvalid, n.col, err)
		}
		arr, err := claimValue(claims, n.val.claim, at, n.col)
		if err != nil {
			return nil, err
		}
		out.arr = arr
		_, err = chtype.SplitArray(arr, func(_ int, elem []byte) error {
			out.set = append(out.set, bytes.Clone(elem))
			return nil
		})
		return out, err
	}
	raw := []byte(n.val.lit)
	if n.val.claim != "" {
		v, err := claimValue(claims, n.val.claim, c.Type, n.col)
		if err != nil {
			return nil, err
		}
		out.val = v
		return out, nil
	}
	v, err := c.Type.Canonical(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: the filter of table %s compares column %s with %s: %w", ErrInvalid, table, n.col, raw, err)
	}
	out.val = v
	return out, nil
}

// claimValue returns claim's value canonical for typ (the type of column col).
func claimValue(claims Claims, claim string, typ *chtype.Type, col string) ([]byte, error) {
	v, ok := claims[claim]
	if !ok {
		return nil, fmt.Errorf("%w: the token has no claim %q, which the role's policy reads", ErrMissingClaim, claim)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: claim %q: %w", ErrClaimType, claim, err)
	}
	c, err := typ.Canonical(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: claim %q does not fit column %s (%s)", ErrClaimType, claim, col, typ.Name)
	}
	return c, nil
}

// Table returns the table the policy is bound for.
func (b *Bound) Table() string { return b.table }

// Columns returns the columns the role reads, in table order.
func (b *Bound) Columns() []string { return b.visible }

// Readable reports whether the role reads column col.
func (b *Bound) Readable(col string) bool { return slices.Contains(b.visible, col) }

// Denied returns the table's columns the role may not read.
func (b *Bound) Denied() []string {
	var out []string
	for _, c := range b.all {
		if !b.Readable(c) {
			out = append(out, c)
		}
	}
	return out
}

// Forced returns the value (canonical JSON) every inserted row takes in column col.
func (b *Bound) Forced(col string) (json.RawMessage, bool) {
	v, ok := b.forced[col]
	return v, ok
}

// ForcedColumns returns the columns with a forced value, sorted.
func (b *Bound) ForcedColumns() []string {
	out := make([]string, 0, len(b.forced))
	for c := range b.forced {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Match reports whether a row passes the filter; get returns a column's canonical value, false
// when the row lacks it (then every comparison with it is unknown and the row does not pass).
func (b *Bound) Match(get func(col string) (json.RawMessage, bool)) bool {
	return b.cond == nil || b.cond.eval(get) == yes
}

type tri int

const (
	no tri = iota
	unknown
	yes
)

func (n *bnode) eval(get func(string) (json.RawMessage, bool)) tri {
	switch n.op {
	case "and", "or":
		stop, res := no, yes
		if n.op == "or" {
			stop, res = yes, no
		}
		for _, k := range n.kids {
			switch k.eval(get) {
			case stop:
				return stop
			case unknown:
				res = unknown
			}
		}
		return res
	case "not":
		return 2 - n.kids[0].eval(get)
	}
	v, ok := get(n.col)
	if !ok || string(v) == "null" {
		return unknown
	}
	var hit bool
	switch n.op {
	case "=", "!=":
		if string(n.val) == "null" {
			return unknown
		}
		hit = bytes.Equal(v, n.val) == (n.op == "=")
	default:
		hit = slices.ContainsFunc(n.set, func(e []byte) bool { return bytes.Equal(e, v) }) == (n.op == "in")
	}
	if hit {
		return yes
	}
	return no
}

// where renders the filter as SQL with its values as {name:Type} placeholders named
// prefix0, prefix1 …, and the parameters binding them.
func (b *Bound) where(prefix string) (string, []store.Param) {
	if b.cond == nil {
		return "1", nil
	}
	var params []store.Param
	var sb strings.Builder
	b.cond.sql(&sb, func(typ string, v []byte) string {
		name := prefix + strconv.Itoa(len(params))
		params = append(params, store.Param{Name: name, Value: v})
		return "{" + name + ":" + typ + "}"
	})
	return sb.String(), params
}

func (n *bnode) sql(sb *strings.Builder, param func(typ string, v []byte) string) {
	switch n.op {
	case "and", "or":
		sb.WriteByte('(')
		for i, k := range n.kids {
			if i > 0 {
				sb.WriteString(" " + strings.ToUpper(n.op) + " ")
			}
			k.sql(sb, param)
		}
		sb.WriteByte(')')
		return
	case "not":
		sb.WriteString("(NOT ")
		n.kids[0].sql(sb, param)
		sb.WriteByte(')')
		return
	}
	col := sqlbind.QuoteIdent(n.col)
	switch n.op {
	case "=", "!=":
		fmt.Fprintf(sb, "(%s %s %s)", col, n.op, param(n.typ, n.val))
	default:
		// has() is never NULL; the if keeps a NULL column unknown, as in Match.
		not := ""
		if n.op == "not in" {
			not = "NOT "
		}
		fmt.Fprintf(sb, "if(isNull(%s), NULL, %shas(%s, %s))", col, not, param("Array("+n.typ+")", n.arr), col)
	}
}

// Subquery returns the SQL that reads the table of database db under the policy: its readable
// columns, FINAL when final, and only the rows passing the filter. Its placeholders are
// named prefix0, prefix1 …; params bind them.
func (b *Bound) Subquery(db, prefix string, final bool) (sql string, params []store.Param) {
	cols := make([]string, len(b.visible))
	for i, c := range b.visible {
		cols[i] = sqlbind.QuoteIdent(c)
	}
	list := strings.Join(cols, ", ")
	if list == "" {
		list = "1 AS `_policy_no_column`" // a role that reads no column still counts rows
	}
	from := sqlbind.QuoteIdent(db) + "." + sqlbind.QuoteIdent(b.table)
	if final {
		from += " FINAL"
	}
	where, params := b.where(prefix)
	return "(SELECT " + list + " FROM " + from + " WHERE " + where + ")", params
}
