package sqlscan

import (
	"slices"
	"strings"
)

// Table is a table reference found in a statement.
type Table struct {
	// Database is the qualifying database, empty when the name is unqualified.
	Database string
	// Name is the table name, unquoted and case preserved.
	Name string
}

// String returns "db.name" or "name".
func (t Table) String() string {
	if t.Database == "" {
		return t.Name
	}
	return t.Database + "." + t.Name
}

// clauseKeywords end a FROM list: a bare word among them is never a table alias.
var clauseKeywords = map[string]bool{
	"WHERE": true, "PREWHERE": true, "GROUP": true, "ORDER": true, "LIMIT": true,
	"HAVING": true, "SETTINGS": true, "FORMAT": true, "UNION": true, "EXCEPT": true,
	"INTERSECT": true, "JOIN": true, "INNER": true, "LEFT": true, "RIGHT": true,
	"FULL": true, "CROSS": true, "OUTER": true, "ANY": true, "ALL": true, "SEMI": true,
	"ANTI": true, "ASOF": true, "ARRAY": true, "GLOBAL": true, "ON": true, "USING": true,
	"SAMPLE": true, "FINAL": true, "WINDOW": true, "QUALIFY": true, "INTO": true,
	"OFFSET": true, "FETCH": true, "PASTE": true, "WITH": true, "AS": true, "LOCAL": true,
}

// Tables returns the tables a SELECT (or WITH … SELECT) statement reads and whether the
// list is certainly complete. It finds the names after FROM and JOIN (also comma-joined,
// database-qualified and quoted ones), after IN, and inside subqueries, skipping string
// literals and comments. sure is false whenever it meets something it cannot resolve: a
// table function (numbers(), remote(), file() …), a parameter in place of a name, a
// dictionary or join-engine function (dictGet, joinGet), a statement other than
// SELECT/WITH, or text that does not tokenize. The list may hold extra names (a CTE name,
// a column after EXTRACT(… FROM col)); callers treat it as a superset. When sure is
// false, callers must depend on every table of the tenant.
//
// Views are reported by their own name: a caller whose tables may be views must resolve
// them (or depend on every table).
func Tables(sql string) (tables []Table, sure bool) {
	if Check(sql) != nil {
		return nil, false
	}
	toks, err := tokenize(sql)
	if err != nil {
		return nil, false
	}
	stmt, err := single(toks)
	if err != nil {
		return nil, false
	}
	first := leadingKeyword(stmt)
	if first >= 0 && (stmt[first].is("DESCRIBE") || stmt[first].is("DESC")) {
		return describedTable(stmt[first+1:])
	}
	if first < 0 || !(stmt[first].is("SELECT") || stmt[first].is("WITH")) {
		return nil, false
	}
	return scanTables(stmt)
}

// describedTable reads the table of "DESCRIBE [TABLE] [db.]t" (what clickhouse-go sends before
// a batch insert) from the tokens after DESCRIBE: sure only for one plain name and nothing
// after it but a FORMAT clause (a subquery or a table function is left unsure).
func describedTable(toks []token) ([]Table, bool) {
	i := 0
	if i < len(toks) && toks[i].is("TABLE") {
		i++
	}
	s := &tableScan{toks: toks, sure: true, seen: map[Table]bool{}}
	next, ok := s.ref(i)
	if !ok || !s.sure || len(s.seen) != 1 {
		return nil, false
	}
	if next < len(toks) && !(toks[next].is("FORMAT") && next+2 >= len(toks)) && !toks[next].isPunct(";") {
		return nil, false
	}
	for t := range s.seen {
		return []Table{t}, true
	}
	return nil, false
}

// scanTables finds the tables the tokens of a SELECT (or of the SELECT part of a statement)
// read; see [Tables].
func scanTables(stmt []token) (tables []Table, sure bool) {
	s := scanRefs(stmt)
	for tbl := range s.seen {
		tables = append(tables, tbl)
	}
	slices.SortFunc(tables, func(a, b Table) int { return strings.Compare(a.String(), b.String()) })
	return tables, s.sure
}

// scanRefs scans the tokens of a SELECT for table references; see [Tables].
func scanRefs(stmt []token) *tableScan {
	s := &tableScan{toks: stmt, sure: true, seen: map[Table]bool{}}
	for i, t := range stmt {
		switch {
		case t.is("FROM"):
			s.list(i + 1)
		case t.is("JOIN"):
			if i > 0 && stmt[i-1].is("ARRAY") {
				continue // ARRAY JOIN takes an array expression, not a table.
			}
			s.list(i + 1)
		case t.is("IN"):
			if i+1 < len(stmt) && !stmt[i+1].isPunct("(") && !stmt[i+1].isPunct("[") &&
				!(stmt[i+1].isPunct("{") && !namesIdentifier(stmt, i+1)) { // "x IN {set:Array(T)}" is a value
				n := len(s.refs)
				s.ref(i + 1) // "x IN t" reads table t.
				if len(s.refs) > n {
					s.refs[n].In = true
				}
			}
		case t.kind == tokWord && i+1 < len(stmt) && stmt[i+1].isPunct("("):
			name := strings.ToLower(t.text)
			if strings.HasPrefix(name, "dict") || strings.HasPrefix(name, "joinget") {
				s.sure = false
			}
		case t.isPunct("{"):
			if namesIdentifier(stmt, i) {
				s.sure = false // an Identifier parameter may name a table or database.
			}
		}
	}
	return s
}

// namesIdentifier reports whether the query parameter opening at toks[i] ("{name:Type}") may
// name a table or database: its type is Identifier, or it is not a well-formed parameter. A
// parameter of any other type is a value; in a table position it is still no plain name, so
// ref makes the scan unsure there.
func namesIdentifier(toks []token, i int) bool {
	if i+4 >= len(toks) || toks[i+1].kind != tokWord || !toks[i+2].isPunct(":") || toks[i+3].kind != tokWord {
		return true
	}
	return toks[i+3].text == "Identifier"
}

type tableScan struct {
	toks []token
	sure bool
	seen map[Table]bool
	refs []Ref
}

// list reads a comma-separated FROM list starting at toks[i].
func (s *tableScan) list(i int) {
	for {
		n := len(s.refs)
		next, ok := s.ref(i)
		if !ok {
			return
		}
		if len(s.refs) > n {
			s.decorate(&s.refs[n], next)
		}
		i = s.skipAlias(next)
		if i < len(s.toks) && s.toks[i].isPunct(",") && s.toks[i].depth == s.toks[next-1].depth {
			i++
			continue
		}
		return
	}
}

// ref reads one table reference at toks[i] and returns the index after it. A subquery
// is accepted (its own FROM is scanned separately) and skipped; anything else that is
// not a plain name makes the scan unsure.
func (s *tableScan) ref(i int) (int, bool) {
	if i >= len(s.toks) {
		s.sure = false
		return i, false
	}
	t := s.toks[i]
	if t.isPunct("(") {
		if i+1 < len(s.toks) && (s.toks[i+1].is("SELECT") || s.toks[i+1].is("WITH") || s.toks[i+1].isPunct("(")) {
			return closing(s.toks, i) + 1, true
		}
		s.sure = false
		return i, false
	}
	name, ok := ident(t)
	if !ok {
		s.sure = false
		return i, false
	}
	tbl := Table{Name: name}
	i++
	if i+1 < len(s.toks) && s.toks[i].isPunct(".") {
		second, ok := ident(s.toks[i+1])
		if !ok {
			s.sure = false
			return i, false
		}
		tbl = Table{Database: name, Name: second}
		i += 2
	}
	if i < len(s.toks) && s.toks[i].isPunct("(") {
		s.sure = false // a table function
		return i, false
	}
	s.seen[tbl] = true
	s.refs = append(s.refs, Ref{Table: tbl, Start: t.start, End: s.toks[i-1].end})
	return i, true
}

// skipAlias skips FINAL and an alias ("AS x" or a bare "x") after a table reference.
func (s *tableScan) skipAlias(i int) int {
	if i < len(s.toks) && s.toks[i].is("FINAL") {
		i++
	}
	if i < len(s.toks) && s.toks[i].is("AS") {
		return i + 2
	}
	if i < len(s.toks) {
		t := s.toks[i]
		if t.kind == tokQuoted || (t.kind == tokWord && !clauseKeywords[strings.ToUpper(t.text)]) {
			i++
		}
	}
	if i < len(s.toks) && s.toks[i].is("FINAL") {
		i++
	}
	return i
}

// ident returns the name of a bare or quoted identifier token.
func ident(t token) (string, bool) {
	switch t.kind {
	case tokWord:
		if clauseKeywords[strings.ToUpper(t.text)] || readKeywords[strings.ToUpper(t.text)] {
			return "", false
		}
		return t.text, true
	case tokQuoted:
		return t.value, t.value != ""
	}
	return "", false
}

// closing returns the index of the parenthesis that closes toks[open].
func closing(toks []token, open int) int {
	d := toks[open].depth
	for j := open + 1; j < len(toks); j++ {
		if (toks[j].isPunct(")") || toks[j].isPunct("]")) && toks[j].depth == d {
			return j
		}
	}
	return len(toks) - 1
}
