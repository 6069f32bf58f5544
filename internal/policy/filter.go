package policy

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Filter is a parsed row filter: comparisons of a column with a claim or a literal, joined by
// AND, OR and NOT. It is the one expression both SQL (a WHERE over the table) and Go (a check
// of a streamed or inserted row) evaluate, with the same three-valued logic: a comparison with
// NULL, or with a column the row lacks, is unknown, and only a row for which the filter is
// true passes.
//
//	expr   := or
//	or     := and { OR and }
//	and    := unary { AND unary }
//	unary  := NOT unary | "(" expr ")" | column op value | column [NOT] IN value
//	op     := "=" | "!=" | "<>"
//	value  := {claim:name} | 'string' | number | true | false
//
// A column is a bare identifier or `back-quoted`; IN takes a claim holding a JSON array.
type Filter struct {
	src  string
	root *node
}

// node is one operator of a filter.
type node struct {
	op   string // "and", "or", "not", "=", "!=", "in", "not in"
	kids []*node
	col  string
	val  value
}

// value is a comparison's right side: a claim, or a literal as JSON.
type value struct {
	claim string
	lit   json.RawMessage
}

// String returns the filter as written.
func (f *Filter) String() string { return f.src }

// Columns returns the columns the filter compares, once each, in order of appearance.
func (f *Filter) Columns() []string {
	var out []string
	walk(f.root, func(n *node) {
		if n.col != "" && !contains(out, n.col) {
			out = append(out, n.col)
		}
	})
	return out
}

// Claims returns the claims the filter reads, once each, in order of appearance.
func (f *Filter) Claims() []string {
	var out []string
	walk(f.root, func(n *node) {
		if n.val.claim != "" && !contains(out, n.val.claim) {
			out = append(out, n.val.claim)
		}
	})
	return out
}

func walk(n *node, fn func(*node)) {
	fn(n)
	for _, k := range n.kids {
		walk(k, fn)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// ParseFilter parses a row filter; the error says where it stops making sense.
func ParseFilter(src string) (*Filter, error) {
	toks, err := lexFilter(src)
	if err != nil {
		return nil, err
	}
	p := &filterParser{toks: toks}
	root, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, fmt.Errorf("unexpected %q at offset %d", p.toks[p.i].text, p.toks[p.i].off)
	}
	return &Filter{src: src, root: root}, nil
}

type ftokKind int

const (
	fWord ftokKind = iota
	fIdent
	fString
	fNumber
	fClaim
	fPunct
)

type ftok struct {
	kind ftokKind
	text string // a word, an identifier's name, a claim's name, a string's value, punctuation
	off  int
}

func (t ftok) kw(k string) bool { return t.kind == fWord && strings.EqualFold(t.text, k) }

func lexFilter(s string) ([]ftok, error) {
	var out []ftok
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '{':
			end := strings.IndexByte(s[i:], '}')
			name, ok := strings.CutPrefix(s[i+1:i+max(end, 1)], "claim:")
			if end < 0 || !ok || strings.TrimSpace(name) == "" {
				return nil, fmt.Errorf("at offset %d: a placeholder is {claim:name}", i)
			}
			out = append(out, ftok{fClaim, strings.TrimSpace(name), i})
			i += end + 1
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(s) && s[j] != '\''; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("at offset %d: unterminated string", i)
			}
			out = append(out, ftok{fString, b.String(), i})
			i = j + 1
		case c == '`':
			j := strings.IndexByte(s[i+1:], '`')
			if j <= 0 {
				return nil, fmt.Errorf("at offset %d: unterminated or empty `identifier`", i)
			}
			out = append(out, ftok{fIdent, s[i+1 : i+1+j], i})
			i += j + 2
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E') {
				j++
			}
			if !json.Valid([]byte(s[i:j])) {
				return nil, fmt.Errorf("at offset %d: %q is not a number", i, s[i:j])
			}
			out = append(out, ftok{fNumber, s[i:j], i})
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			out = append(out, ftok{fWord, s[i:j], i})
			i = j
		case strings.HasPrefix(s[i:], "!=") || strings.HasPrefix(s[i:], "<>"):
			out = append(out, ftok{fPunct, "!=", i})
			i += 2
		case c == '=' || c == '(' || c == ')':
			out = append(out, ftok{fPunct, string(c), i})
			i++
		default:
			return nil, fmt.Errorf("at offset %d: unexpected %q; a filter compares columns with =, != or IN, joined by AND, OR, NOT", i, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty filter")
	}
	return out, nil
}

type filterParser struct {
	toks []ftok
	i    int
}

func (p *filterParser) peek() (ftok, bool) {
	if p.i < len(p.toks) {
		return p.toks[p.i], true
	}
	return ftok{}, false
}

func (p *filterParser) or() (*node, error) {
	return p.chain("OR", p.and)
}

func (p *filterParser) and() (*node, error) {
	return p.chain("AND", p.unary)
}

func (p *filterParser) chain(kw string, next func() (*node, error)) (*node, error) {
	first, err := next()
	if err != nil {
		return nil, err
	}
	n := &node{op: strings.ToLower(kw), kids: []*node{first}}
	for {
		t, ok := p.peek()
		if !ok || !t.kw(kw) {
			break
		}
		p.i++
		k, err := next()
		if err != nil {
			return nil, err
		}
		n.kids = append(n.kids, k)
	}
	if len(n.kids) == 1 {
		return first, nil
	}
	return n, nil
}

func (p *filterParser) unary() (*node, error) {
	t, ok := p.peek()
	if !ok {
		return nil, fmt.Errorf("the filter ends where a comparison should follow")
	}
	switch {
	case t.kw("NOT"):
		p.i++
		k, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &node{op: "not", kids: []*node{k}}, nil
	case t.kind == fPunct && t.text == "(":
		p.i++
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if c, ok := p.peek(); !ok || c.kind != fPunct || c.text != ")" {
			return nil, fmt.Errorf("at offset %d: missing )", t.off)
		}
		p.i++
		return n, nil
	case t.kind == fIdent || t.kind == fWord && !reserved(t.text):
		p.i++
		return p.comparison(t)
	}
	return nil, fmt.Errorf("at offset %d: want a column, NOT or (, got %q", t.off, t.text)
}

func reserved(w string) bool {
	switch strings.ToUpper(w) {
	case "AND", "OR", "NOT", "IN", "TRUE", "FALSE", "NULL":
		return true
	}
	return false
}

func (p *filterParser) comparison(col ftok) (*node, error) {
	t, ok := p.peek()
	if !ok {
		return nil, fmt.Errorf("at offset %d: column %s is compared with nothing", col.off, col.text)
	}
	n := &node{col: col.text}
	switch {
	case t.kind == fPunct && (t.text == "=" || t.text == "!="):
		n.op = t.text
		p.i++
	case t.kw("IN"):
		n.op = "in"
		p.i++
	case t.kw("NOT"):
		p.i++
		if in, ok := p.peek(); !ok || !in.kw("IN") {
			return nil, fmt.Errorf("at offset %d: NOT after a column must be NOT IN", t.off)
		}
		n.op = "not in"
		p.i++
	default:
		return nil, fmt.Errorf("at offset %d: want =, != or IN after column %s", t.off, col.text)
	}
	v, ok := p.peek()
	if !ok {
		return nil, fmt.Errorf("column %s: the comparison has no value", col.text)
	}
	p.i++
	switch {
	case v.kind == fClaim:
		n.val.claim = v.text
	case n.op == "in" || n.op == "not in":
		return nil, fmt.Errorf("at offset %d: IN takes a claim holding an array, {claim:name}", v.off)
	case v.kind == fString:
		b, _ := json.Marshal(v.text)
		n.val.lit = b
	case v.kind == fNumber:
		n.val.lit = json.RawMessage(v.text)
	case v.kw("TRUE") || v.kw("FALSE"):
		n.val.lit = json.RawMessage(strings.ToLower(v.text))
	default:
		return nil, fmt.Errorf("at offset %d: want {claim:name}, a 'string', a number, true or false", v.off)
	}
	return n, nil
}
