package sqlscan

import (
	"errors"
	"fmt"
	"strings"
)

// ErrRejected is wrapped by every refusal of [Check]; the message after it says why.
var ErrRejected = errors.New("sqlscan: statement rejected")

// readKeywords are the statements Check lets through.
var readKeywords = map[string]bool{
	"SELECT": true, "WITH": true, "SHOW": true, "DESCRIBE": true, "DESC": true,
	"EXISTS": true, "EXPLAIN": true,
}

// writeKeywords start statements that change data, schema, settings or the server.
var writeKeywords = map[string]bool{
	"INSERT": true, "ALTER": true, "DROP": true, "CREATE": true, "TRUNCATE": true,
	"DELETE": true, "UPDATE": true, "RENAME": true, "ATTACH": true, "DETACH": true,
	"OPTIMIZE": true, "GRANT": true, "REVOKE": true, "KILL": true, "SYSTEM": true,
	"SET": true, "USE": true, "EXCHANGE": true, "UNDROP": true, "MOVE": true,
	"BACKUP": true, "RESTORE": true, "REPLACE": true, "UPSERT": true, "MERGE": true,
	"WATCH": true, "BEGIN": true, "COMMIT": true, "ROLLBACK": true, "CHECK": true,
}

// Check reports whether sql is one read-only statement: SELECT, WITH … SELECT, SHOW,
// DESCRIBE/DESC, EXISTS or EXPLAIN of a SELECT. It understands comments ("--", "#",
// "/* */"), string literals and quoted identifiers, so a keyword inside them counts for
// nothing and a statement hidden after a comment is still seen. It refuses a second
// statement after ';', a write statement after a WITH clause, SELECT … INTO OUTFILE,
// and anything it cannot tokenize unambiguously. The error wraps [ErrRejected].
//
// Check is a first line of defence: the server must also run queries read-only.
func Check(sql string) error {
	toks, err := tokenize(sql)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	stmt, err := single(toks)
	if err != nil {
		return err
	}
	for i, t := range stmt {
		if t.is("INTO") {
			if i+1 < len(stmt) && stmt[i+1].is("OUTFILE") {
				return fmt.Errorf("%w: INTO OUTFILE writes a file", ErrRejected)
			}
			return fmt.Errorf("%w: INTO is not accepted in a read statement", ErrRejected)
		}
	}
	first := leadingKeyword(stmt)
	if first < 0 {
		return fmt.Errorf("%w: not a read statement", ErrRejected)
	}
	kw := strings.ToUpper(stmt[first].text)
	if first > 0 && kw != "SELECT" && kw != "WITH" {
		return fmt.Errorf("%w: only SELECT or WITH may follow '('", ErrRejected)
	}
	switch kw {
	case "SELECT", "SHOW", "DESCRIBE", "DESC", "EXISTS":
		return nil
	case "WITH":
		return checkWith(stmt[first+1:])
	case "EXPLAIN":
		return checkExplain(stmt[first+1:])
	}
	return fmt.Errorf("%w: %s is not a read statement; only SELECT, WITH … SELECT, SHOW, DESCRIBE, EXISTS and EXPLAIN are accepted", ErrRejected, kw)
}

// single returns the tokens of the only statement in toks, refusing a second one.
func single(toks []token) ([]token, error) {
	for i, t := range toks {
		if t.isPunct(";") {
			if i+1 < len(toks) {
				return nil, fmt.Errorf("%w: multiple statements", ErrRejected)
			}
			toks = toks[:i]
			break
		}
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("%w: empty statement", ErrRejected)
	}
	return toks, nil
}

// leadingKeyword returns the index of the first token after leading '(' when it is a
// bare word, or -1.
func leadingKeyword(stmt []token) int {
	for i, t := range stmt {
		if t.isPunct("(") {
			continue
		}
		if t.kind == tokWord {
			return i
		}
		return -1
	}
	return -1
}

// checkWith accepts a WITH clause followed by a SELECT: the first statement keyword at
// the outer level must be SELECT.
func checkWith(rest []token) error {
	depth := -1
	for _, t := range rest {
		if depth < 0 {
			depth = t.depth
		}
		if t.kind != tokWord || t.depth != depth {
			continue
		}
		kw := strings.ToUpper(t.text)
		if kw == "SELECT" {
			return nil
		}
		if writeKeywords[kw] {
			return fmt.Errorf("%w: %s after a WITH clause", ErrRejected, kw)
		}
	}
	return fmt.Errorf("%w: WITH clause not followed by SELECT", ErrRejected)
}

// checkExplain accepts EXPLAIN [kind] [settings] of a SELECT or WITH … SELECT.
func checkExplain(rest []token) error {
	for i, t := range rest {
		if t.kind != tokWord || t.depth != 0 {
			continue
		}
		kw := strings.ToUpper(t.text)
		switch {
		case kw == "SELECT":
			return nil
		case kw == "WITH":
			return checkWith(rest[i+1:])
		case writeKeywords[kw] || readKeywords[kw]:
			return fmt.Errorf("%w: EXPLAIN %s; only EXPLAIN of a SELECT is accepted", ErrRejected, kw)
		}
	}
	return fmt.Errorf("%w: EXPLAIN without a SELECT", ErrRejected)
}
