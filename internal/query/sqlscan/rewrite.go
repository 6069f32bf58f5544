package sqlscan

import (
	"fmt"
	"slices"
	"strings"
)

// Ref is one place where a SELECT names a table: after FROM, JOIN or IN, at any depth.
type Ref struct {
	Table Table
	// Start and End are the byte offsets of the (possibly qualified, quoted) name.
	Start, End int
	// Aliased is set when an alias follows the name ("t AS x", "t x").
	Aliased bool
	// In is set for the operand of IN ("x IN t"), where no alias may follow.
	In bool
	// FinalStart and FinalEnd are the offsets of a FINAL modifier of the reference (after the
	// name or after its alias); both are zero without one.
	FinalStart, FinalEnd int
}

// Final reports whether the reference carries FINAL.
func (r Ref) Final() bool { return r.FinalEnd > 0 }

// decorate records the FINAL and alias that follow a FROM or JOIN reference ending before
// toks[i].
func (s *tableScan) decorate(r *Ref, i int) {
	final := func() {
		if i < len(s.toks) && s.toks[i].is("FINAL") && r.FinalEnd == 0 {
			r.FinalStart, r.FinalEnd = s.toks[i].start, s.toks[i].end
			i++
		}
	}
	final()
	if i < len(s.toks) {
		t := s.toks[i]
		switch {
		case t.is("AS"):
			r.Aliased = true
			i += 2
		case t.kind == tokQuoted || (t.kind == tokWord && !clauseKeywords[strings.ToUpper(t.text)]):
			r.Aliased = true
			i++
		}
	}
	final()
}

// RewriteTables returns sql, a single SELECT (or WITH … SELECT) statement that [Check]
// accepts, with the table references replace chooses substituted: replace returns the text
// that takes the place of the reference's name (and of its FINAL modifier, which the
// replacement must carry itself when it wants it) and true, or false to leave the reference
// alone. The statement must be one whose tables [Tables] is sure of; otherwise, or when the
// text does not tokenize, the error wraps [ErrRejected]. Nothing else of the text changes.
func RewriteTables(sql string, replace func(Ref) (string, bool)) (string, error) {
	if err := Check(sql); err != nil {
		return "", err
	}
	toks, err := tokenize(sql)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrRejected, err)
	}
	stmt, err := single(toks)
	if err != nil {
		return "", err
	}
	first := leadingKeyword(stmt)
	if first < 0 || !(stmt[first].is("SELECT") || stmt[first].is("WITH")) {
		return "", fmt.Errorf("%w: only SELECT statements may read a table under a row policy", ErrRejected)
	}
	s := scanRefs(stmt)
	if !s.sure {
		return "", fmt.Errorf("%w: the tables this query reads could not be determined (a table function, a dictionary, a parameter in place of a name); name them plainly", ErrRejected)
	}
	type cut struct {
		start, end int
		text       string
	}
	var cuts []cut
	for _, r := range s.refs {
		text, ok := replace(r)
		if !ok {
			continue
		}
		cuts = append(cuts, cut{r.Start, r.End, text})
		if r.Final() {
			cuts = append(cuts, cut{r.FinalStart, r.FinalEnd, ""})
		}
	}
	if len(cuts) == 0 {
		return sql, nil
	}
	slices.SortFunc(cuts, func(a, b cut) int { return a.start - b.start })
	var b strings.Builder
	last := 0
	for _, c := range cuts {
		if c.start < last {
			return "", fmt.Errorf("%w: overlapping table references", ErrRejected)
		}
		b.WriteString(sql[last:c.start])
		b.WriteString(c.text)
		last = c.end
	}
	b.WriteString(sql[last:])
	return b.String(), nil
}

// Identifiers returns the names sql spells as bare words or quoted identifiers (keywords and
// function names included, literals and comments excluded), once each; nil when the text does
// not tokenize.
func Identifiers(sql string) []string {
	toks, err := tokenize(sql)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, t := range toks {
		if (t.kind == tokWord || t.kind == tokQuoted) && !seen[t.value] {
			seen[t.value] = true
			out = append(out, t.value)
		}
	}
	return out
}
