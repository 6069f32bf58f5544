// Package sqlbind binds {name:Type} query parameters for the store backends: as escaped SQL
// literals on the client for engines that cannot bind them, or as the text values a server
// binds natively. Every value is validated against its declared type with package chtype
// first, so a parameter is always data and never SQL.
package sqlbind

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
)

// Placeholder is one {name:Type} occurrence in a statement.
type Placeholder struct {
	Name       string
	TypeName   string
	Start, End int // byte offsets of "{" and just past "}"
}

// Find returns the placeholders of sql outside string literals, quoted identifiers and comments.
func Find(sql string) ([]Placeholder, error) {
	var out []Placeholder
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '\'' || c == '"' || c == '`':
			j := skipQuoted(sql, i)
			if j < 0 {
				return nil, fmt.Errorf("%w: unterminated quote at offset %d", store.ErrRejected, i)
			}
			i = j - 1
		case c == '-' && strings.HasPrefix(sql[i:], "--"), c == '#' && strings.HasPrefix(sql[i:], "#!"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return out, nil
			}
			i += j
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			j := strings.Index(sql[i+2:], "*/")
			if j < 0 {
				return nil, fmt.Errorf("%w: unterminated comment at offset %d", store.ErrRejected, i)
			}
			i += j + 3
		case c == '{':
			p, ok := parsePlaceholder(sql, i)
			if !ok {
				continue
			}
			out = append(out, p)
			i = p.End - 1
		}
	}
	return out, nil
}

func skipQuoted(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	return -1
}

func parsePlaceholder(sql string, start int) (Placeholder, bool) {
	i := start + 1
	for i < len(sql) && sql[i] == ' ' {
		i++
	}
	ns := i
	for i < len(sql) && (sql[i] == '_' || sql[i] >= 'a' && sql[i] <= 'z' || sql[i] >= 'A' && sql[i] <= 'Z' || sql[i] >= '0' && sql[i] <= '9') {
		i++
	}
	name := sql[ns:i]
	for i < len(sql) && sql[i] == ' ' {
		i++
	}
	if name == "" || i >= len(sql) || sql[i] != ':' {
		return Placeholder{}, false
	}
	i++
	ts := i
	depth := 0
	for ; i < len(sql); i++ {
		switch sql[i] {
		case '\'':
			j := skipQuoted(sql, i)
			if j < 0 {
				return Placeholder{}, false
			}
			i = j - 1
		case '(':
			depth++
		case ')':
			depth--
		case '}':
			if depth == 0 {
				return Placeholder{Name: name, TypeName: strings.TrimSpace(sql[ts:i]), Start: start, End: i + 1}, true
			}
		}
	}
	return Placeholder{}, false
}

// ErrParam is wrapped (with store.ErrRejected) by parameter errors.
var ErrParam = errors.New("sqlbind: bad parameter")

// values validates every placeholder's value and returns parsed types and canonical values.
func values(sql string, params []store.Param) ([]Placeholder, []*chtype.Type, [][]byte, error) {
	phs, err := Find(sql)
	if err != nil {
		return nil, nil, nil, err
	}
	byName := make(map[string][]byte, len(params))
	for _, p := range params {
		byName[p.Name] = p.Value
	}
	types := make([]*chtype.Type, len(phs))
	vals := make([][]byte, len(phs))
	for i, ph := range phs {
		t, err := chtype.Parse(ph.TypeName)
		if err != nil || !t.Supported() {
			return nil, nil, nil, fmt.Errorf("%w: %w: {%s:%s}: unsupported type", store.ErrRejected, ErrParam, ph.Name, ph.TypeName)
		}
		raw, ok := byName[ph.Name]
		if !ok {
			return nil, nil, nil, fmt.Errorf("%w: %w: no value for {%s:%s}", store.ErrRejected, ErrParam, ph.Name, ph.TypeName)
		}
		c, err := t.Canonical(raw)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%w: %w: %s: %w", store.ErrRejected, ErrParam, ph.Name, err)
		}
		types[i], vals[i] = t, c
	}
	return phs, types, vals, nil
}

// Bind replaces every placeholder of sql with a typed SQL literal of its validated value.
func Bind(sql string, params []store.Param) (string, error) {
	phs, types, vals, err := values(sql, params)
	if err != nil || len(phs) == 0 {
		return sql, err
	}
	var b strings.Builder
	last := 0
	for i, ph := range phs {
		b.WriteString(sql[last:ph.Start])
		lit, err := Literal(types[i], vals[i])
		if err != nil {
			return "", fmt.Errorf("%w: %w: %s: %w", store.ErrRejected, ErrParam, ph.Name, err)
		}
		b.WriteString(lit)
		last = ph.End
	}
	b.WriteString(sql[last:])
	return b.String(), nil
}

// Native returns the text values a server binding {name:Type} itself expects (the type's
// escaped text form), after validating each value.
func Native(sql string, params []store.Param) (map[string]string, error) {
	phs, types, vals, err := values(sql, params)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(phs))
	for i, ph := range phs {
		s, err := nativeText(types[i], vals[i])
		if err != nil {
			return nil, fmt.Errorf("%w: %w: %s: %w", store.ErrRejected, ErrParam, ph.Name, err)
		}
		out[ph.Name] = s
	}
	return out, nil
}

func nativeText(t *chtype.Type, canonical []byte) (string, error) {
	if string(canonical) == "null" {
		return `\N`, nil
	}
	switch t.Base().Kind {
	case chtype.Array, chtype.Tuple, chtype.Map:
		return literalNoCast(t, canonical)
	}
	s := string(canonical)
	if u, ok := unquoteJSON(canonical); ok {
		s = u
	}
	r := strings.NewReplacer("\\", "\\\\", "\t", "\\t", "\n", "\\n", "\r", "\\r", "\x00", "\\0")
	return r.Replace(s), nil
}

// Quote returns s as a single-quoted ClickHouse string literal.
func Quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' || c == '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(c)>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(c)&0xf, 16))
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// QuoteIdent returns name as a back-quoted identifier.
func QuoteIdent(name string) string {
	return "`" + strings.NewReplacer("\\", "\\\\", "`", "\\`").Replace(name) + "`"
}
