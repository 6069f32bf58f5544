package sqlscan

import (
	"strings"
)

// SplitFormat returns sql without a trailing FORMAT clause, and the clause's format name
// (empty when there is none). A FORMAT counts only at the outer level as the last clause of
// the statement (followed by nothing but one optional ';', whitespace and comments), so the
// word inside a literal, an identifier or a subquery is left alone. Text that does not
// tokenize is returned unchanged with no format; Check reports it.
func SplitFormat(sql string) (stmt, format string) {
	toks, err := tokenize(sql)
	if err != nil {
		return sql, ""
	}
	n := len(toks)
	if n > 0 && toks[n-1].isPunct(";") {
		n--
	}
	if n < 3 {
		return sql, ""
	}
	name, kw := toks[n-1], toks[n-2]
	if !kw.is("FORMAT") || kw.depth != 0 || (name.kind != tokWord && name.kind != tokQuoted) {
		return sql, ""
	}
	format = name.value
	return strings.TrimRight(sql[:kw.start], " \t\r\n"), format
}

// LeadingKeyword returns the first word of the statement in upper case (after leading
// parentheses, whitespace and comments), or "" when it does not start with one.
func LeadingKeyword(sql string) string {
	toks, err := tokenize(sql)
	if err != nil {
		return ""
	}
	if i := leadingKeyword(toks); i >= 0 {
		return strings.ToUpper(toks[i].text)
	}
	return ""
}

// IsWriteKeyword reports whether kw (upper case) starts a statement that changes data,
// schema, settings or the server.
func IsWriteKeyword(kw string) bool { return writeKeywords[kw] }

// SelectCalls reports whether sql is exactly "SELECT f(), g(), …" — a SELECT of argument-less
// function calls with no FROM or other clause, as the connect queries of ClickHouse clients are
// ("SELECT displayName(), version(), revision(), timezone()") — and returns the function names
// as written.
func SelectCalls(sql string) ([]string, bool) {
	toks, err := tokenize(sql)
	if err != nil {
		return nil, false
	}
	if n := len(toks); n > 0 && toks[n-1].isPunct(";") {
		toks = toks[:n-1]
	}
	if len(toks) < 4 || !toks[0].is("SELECT") {
		return nil, false
	}
	var names []string
	for i := 1; ; i += 4 {
		if i+2 >= len(toks) || toks[i].kind != tokWord || !toks[i+1].isPunct("(") || !toks[i+2].isPunct(")") {
			return nil, false
		}
		names = append(names, toks[i].text)
		switch {
		case i+3 == len(toks):
			return names, true
		case !toks[i+3].isPunct(","):
			return nil, false
		}
	}
}
