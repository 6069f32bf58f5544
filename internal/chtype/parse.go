package chtype

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxDepth bounds nesting so hostile type strings cannot exhaust the stack.
const maxDepth = 64

// ErrSyntax is returned (wrapped) by Parse for malformed type text.
var ErrSyntax = errors.New("chtype: malformed type")

// Parse parses a ClickHouse type string such as "Nullable(DateTime64(3, 'UTC'))". A well-formed
// type of an unknown family parses to Kind Unsupported rather than failing.
func Parse(s string) (*Type, error) {
	p := &parser{s: s}
	t, err := p.parseType(0)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, p.errf("unexpected %q", p.s[p.i:])
	}
	return t, nil
}

type parser struct {
	s string
	i int
}

func (p *parser) errf(format string, args ...any) error {
	return fmt.Errorf("%w %q at offset %d: %s", ErrSyntax, p.s, p.i, fmt.Sprintf(format, args...))
}

func (p *parser) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *parser) peek() byte {
	p.ws()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *parser) expect(c byte) error {
	if p.peek() != c {
		return p.errf("expected %q", c)
	}
	p.i++
	return nil
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *parser) ident() (string, error) {
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '`' {
		end := strings.IndexByte(p.s[p.i+1:], '`')
		if end < 0 {
			return "", p.errf("unterminated identifier")
		}
		id := p.s[p.i+1 : p.i+1+end]
		p.i += end + 2
		return id, nil
	}
	start := p.i
	for p.i < len(p.s) && isIdent(p.s[p.i]) {
		p.i++
	}
	if start == p.i {
		return "", p.errf("expected a name")
	}
	return p.s[start:p.i], nil
}

func (p *parser) integer() (int, error) {
	p.ws()
	start := p.i
	if p.i < len(p.s) && p.s[p.i] == '-' {
		p.i++
	}
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	n, err := strconv.Atoi(p.s[start:p.i])
	if err != nil {
		return 0, p.errf("expected an integer")
	}
	return n, nil
}

// quoted reads a single-quoted SQL string literal with backslash or doubled-quote escapes.
func (p *parser) quoted() (string, error) {
	if p.peek() != '\'' {
		return "", p.errf("expected a quoted string")
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '\\' && p.i+1 < len(p.s):
			b.WriteByte(unescapeSQL(p.s[p.i+1]))
			p.i += 2
		case c == '\'' && p.i+1 < len(p.s) && p.s[p.i+1] == '\'':
			b.WriteByte('\'')
			p.i += 2
		case c == '\'':
			p.i++
			return b.String(), nil
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", p.errf("unterminated string")
}

func unescapeSQL(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	case '0':
		return 0
	}
	return c
}

// skipArgs skips a balanced parenthesised argument list, quotes included.
func (p *parser) skipArgs() error {
	if err := p.expect('('); err != nil {
		return err
	}
	depth := 1
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				p.i++
				return nil
			}
		case '\'':
			if _, err := p.quoted(); err != nil {
				return err
			}
			continue
		}
		p.i++
	}
	return p.errf("unbalanced parentheses")
}

var simpleKinds = map[string]Kind{
	"String": String, "Int8": Int8, "Int16": Int16, "Int32": Int32, "Int64": Int64,
	"Int128": Int128, "Int256": Int256, "UInt8": UInt8, "UInt16": UInt16, "UInt32": UInt32,
	"UInt64": UInt64, "UInt128": UInt128, "UInt256": UInt256, "Float32": Float32, "Float64": Float64,
	"Bool": Bool, "Boolean": Bool, "Date": Date, "Date32": Date32, "UUID": UUID, "IPv4": IPv4, "IPv6": IPv6,
}

func (p *parser) parseType(depth int) (*Type, error) {
	if depth > maxDepth {
		return nil, p.errf("type nested too deeply")
	}
	start := p.i
	p.ws()
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	t := &Type{}
	hasArgs := p.peek() == '('
	finish := func() (*Type, error) {
		t.Name = trimName(p.s[start:p.i])
		return t, nil
	}
	if k, ok := simpleKinds[name]; ok && !hasArgs {
		t.Kind = k
		return finish()
	}
	switch name {
	case "DateTime", "DateTime64":
		return p.parseDateTime(t, name, hasArgs, finish)
	case "JSON", "Object":
		t.Kind = JSON
		if hasArgs {
			if err := p.skipArgs(); err != nil {
				return nil, err
			}
		}
		return finish()
	}
	if !hasArgs {
		t.Kind = Unsupported
		return finish()
	}
	p.i++ // '('
	switch name {
	case "FixedString":
		n, err := p.integer()
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return nil, p.errf("FixedString length must be positive")
		}
		t.Kind, t.Len = FixedString, n
	case "Decimal":
		if err := p.parseDecimal(t); err != nil {
			return nil, err
		}
	case "Decimal32", "Decimal64", "Decimal128", "Decimal256":
		s, err := p.integer()
		if err != nil {
			return nil, err
		}
		t.Kind, t.Scale = Decimal, s
		t.Precision = map[string]int{"Decimal32": 9, "Decimal64": 18, "Decimal128": 38, "Decimal256": 76}[name]
		if s < 0 || s > t.Precision {
			return nil, p.errf("decimal scale out of range")
		}
	case "Enum8", "Enum16", "Enum":
		if err := p.parseEnum(t, name); err != nil {
			return nil, err
		}
	case "Nullable", "LowCardinality", "Array":
		elem, err := p.parseType(depth + 1)
		if err != nil {
			return nil, err
		}
		t.Kind, t.Elem = map[string]Kind{"Nullable": Nullable, "LowCardinality": LowCardinality, "Array": Array}[name], elem
	case "SimpleAggregateFunction":
		if _, err := p.ident(); err != nil {
			return nil, err
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
		inner, err := p.parseType(depth + 1)
		if err != nil {
			return nil, err
		}
		if err := p.expect(')'); err != nil {
			return nil, err
		}
		inner.Name = trimName(p.s[start:p.i])
		return inner, nil
	case "Map":
		k, err := p.parseType(depth + 1)
		if err != nil {
			return nil, err
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
		v, err := p.parseType(depth + 1)
		if err != nil {
			return nil, err
		}
		t.Kind, t.Key, t.Value = Map, k, v
	case "Tuple":
		if err := p.parseTuple(t, depth); err != nil {
			return nil, err
		}
	default:
		p.i-- // back to '('
		if err := p.skipArgs(); err != nil {
			return nil, err
		}
		t.Kind = Unsupported
		return finish()
	}
	if err := p.expect(')'); err != nil {
		return nil, err
	}
	return finish()
}

func (p *parser) parseDateTime(t *Type, name string, hasArgs bool, finish func() (*Type, error)) (*Type, error) {
	t.Kind = DateTime
	if name == "DateTime64" {
		t.Kind = DateTime64
		if !hasArgs {
			t.Precision = 3
			return finish()
		}
	}
	if !hasArgs {
		return finish()
	}
	p.i++
	if t.Kind == DateTime64 {
		prec, err := p.integer()
		if err != nil {
			return nil, err
		}
		if prec < 0 || prec > 9 {
			return nil, p.errf("DateTime64 precision must be 0..9")
		}
		t.Precision = prec
		if p.peek() == ',' {
			p.i++
		} else {
			if err := p.expect(')'); err != nil {
				return nil, err
			}
			return finish()
		}
	}
	tz, err := p.quoted()
	if err != nil {
		return nil, err
	}
	if err := p.expect(')'); err != nil {
		return nil, err
	}
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "" {
		return nil, p.errf("unknown time zone %q", tz)
	}
	t.TZ, t.loc = tz, loc
	return finish()
}

func (p *parser) parseDecimal(t *Type) error {
	prec, err := p.integer()
	if err != nil {
		return err
	}
	scale := 0
	if p.peek() == ',' {
		p.i++
		if scale, err = p.integer(); err != nil {
			return err
		}
	}
	if prec < 1 || prec > 76 || scale < 0 || scale > prec {
		return p.errf("decimal precision/scale out of range")
	}
	t.Kind, t.Precision, t.Scale = Decimal, prec, scale
	return nil
}

func (p *parser) parseEnum(t *Type, name string) error {
	t.Kind = Enum8
	lo, hi := int64(-128), int64(127)
	if name == "Enum16" {
		t.Kind, lo, hi = Enum16, -32768, 32767
	}
	next := int64(1)
	for {
		label, err := p.quoted()
		if err != nil {
			return err
		}
		v := next
		if p.peek() == '=' {
			p.i++
			n, err := p.integer()
			if err != nil {
				return err
			}
			v = int64(n)
		}
		if v < lo || v > hi {
			if name != "Enum" || v > 32767 || v < -32768 {
				return p.errf("enum value %d out of range", v)
			}
			t.Kind = Enum16
		}
		t.Enum = append(t.Enum, EnumValue{Name: label, Value: int16(v)})
		next = v + 1
		if p.peek() != ',' {
			return nil
		}
		p.i++
	}
}

func (p *parser) parseTuple(t *Type, depth int) error {
	t.Kind = Tuple
	for {
		save := p.i
		var name string
		// A named element is "name Type": an identifier followed by another identifier start.
		if id, err := p.ident(); err == nil {
			p.ws()
			if p.i < len(p.s) && (isIdent(p.s[p.i]) || p.s[p.i] == '`') && p.i > save {
				name = id
			} else {
				p.i = save
			}
		} else {
			p.i = save
		}
		ft, err := p.parseType(depth + 1)
		if err != nil {
			return err
		}
		if len(t.Fields) > 0 && (name != "") != (t.Fields[0].Name != "") {
			return p.errf("tuple mixes named and unnamed elements")
		}
		t.Fields = append(t.Fields, Field{Name: name, Type: ft})
		if p.peek() != ',' {
			return nil
		}
		p.i++
	}
}
