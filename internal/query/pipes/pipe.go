package pipes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/query/sqlscan"
	"github.com/wavehouse/wavehouse/internal/store/sqlbind"
)

// Pipe is one parsed pipe definition. It is immutable and safe for concurrent use.
type Pipe struct {
	// Name is the file name without ".sql".
	Name string
	// Description is the @description directive or the plain header comment lines.
	Description string
	// Params are the declared parameters in header order.
	Params []Param
	// TTL is the lifetime of cached results (0: the query service's default).
	TTL time.Duration
	// Tables are the declared tables the pipe reads (nil: derived from the SQL).
	Tables []string
	// SQL is the statement without the header.
	SQL string
}

// Param is one declared parameter.
type Param struct {
	// Name is the placeholder name.
	Name string
	// Type is the parsed ClickHouse type.
	Type *chtype.Type
	// Required parameters must be given.
	Required bool
	// Default is the canonical JSON value used when the parameter is omitted (nil when
	// Required).
	Default json.RawMessage
	// Description is free text for the listing.
	Description string
}

// reserved names are request options, so they cannot be parameter names.
var reserved = map[string]bool{"format": true, "cache": true, "max_rows": true}

var (
	nameRE  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`)
	paramRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ErrInvalid is wrapped by every definition error of [Parse] and [Load].
var ErrInvalid = errors.New("pipes: invalid definition")

// Parse parses the definition of the pipe name from src. It reports every problem at once,
// each prefixed with the 1-based line it is on.
func Parse(name, src string) (*Pipe, error) {
	p := &Pipe{Name: name}
	var errs []error
	fail := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: line %d: %s", ErrInvalid, line, fmt.Sprintf(format, args...)))
	}
	if !nameRE.MatchString(name) {
		fail(0, "pipe name %q must be letters, digits, '_' and '-'", name)
	}
	lines := strings.SplitAfter(src, "\n")
	var desc []string
	body := len(lines)
	for i, raw := range lines {
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "--") {
			body = i
			break
		}
		text := strings.TrimSpace(strings.TrimPrefix(line, "--"))
		if !strings.HasPrefix(text, "@") {
			if text != "" {
				desc = append(desc, text)
			}
			continue
		}
		directive, rest, _ := strings.Cut(text, " ")
		rest = strings.TrimSpace(rest)
		switch directive {
		case "@param":
			prm, err := parseParam(rest)
			if err != nil {
				fail(i+1, "@param: %v", err)
				continue
			}
			for _, q := range p.Params {
				if q.Name == prm.Name {
					fail(i+1, "@param %s declared twice", prm.Name)
				}
			}
			p.Params = append(p.Params, prm)
		case "@ttl":
			d, err := time.ParseDuration(rest)
			if err != nil || d < 0 {
				fail(i+1, "@ttl %q is not a duration like 30s or 5m", rest)
				continue
			}
			p.TTL = d
		case "@tables":
			for _, t := range strings.Split(rest, ",") {
				if t = strings.TrimSpace(t); t != "" {
					p.Tables = append(p.Tables, t)
				}
			}
			if len(p.Tables) == 0 {
				fail(i+1, "@tables lists no table")
			}
		case "@description":
			desc = append(desc, rest)
		default:
			fail(i+1, "unknown directive %s (want @param, @ttl, @tables or @description)", directive)
		}
	}
	p.Description = strings.Join(desc, " ")
	p.SQL = strings.TrimSpace(strings.Join(lines[body:], ""))
	line := body + 1
	switch {
	case p.SQL == "":
		fail(line, "no SQL statement after the header")
	default:
		if err := sqlscan.Check(p.SQL); err != nil {
			fail(line, "%v", err)
		}
		errs = append(errs, checkPlaceholders(p, line)...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// checkPlaceholders requires each placeholder to be declared with the same type and each
// declared parameter to be used.
func checkPlaceholders(p *Pipe, line int) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: line %d: %s", ErrInvalid, line, fmt.Sprintf(format, args...)))
	}
	found, err := sqlbind.Find(p.SQL)
	if err != nil {
		fail("%v", err)
		return errs
	}
	used := map[string]bool{}
	for _, ph := range found {
		used[ph.Name] = true
		prm, ok := p.param(ph.Name)
		if !ok {
			fail("placeholder {%s:%s} has no @param", ph.Name, ph.TypeName)
			continue
		}
		if compact(ph.TypeName) != compact(prm.Type.Name) {
			fail("placeholder {%s:%s} does not match @param %s %s", ph.Name, ph.TypeName, prm.Name, prm.Type.Name)
		}
	}
	for _, prm := range p.Params {
		if !used[prm.Name] {
			fail("@param %s is not used by the SQL", prm.Name)
		}
	}
	return errs
}

func (p *Pipe) param(name string) (Param, bool) {
	for _, q := range p.Params {
		if q.Name == name {
			return q, true
		}
	}
	return Param{}, false
}

// compact drops white space outside quotes so equal type texts compare equal.
func compact(s string) string {
	var b strings.Builder
	quoted := false
	for _, r := range s {
		if r == '\'' {
			quoted = !quoted
		}
		if !quoted && unicode.IsSpace(r) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// parseParam parses "NAME TYPE [required | default JSON] [description…]".
func parseParam(s string) (Param, error) {
	name, rest, _ := strings.Cut(s, " ")
	if !paramRE.MatchString(name) {
		return Param{}, fmt.Errorf("name %q must be letters, digits and '_'", name)
	}
	if reserved[name] {
		return Param{}, fmt.Errorf("name %q is reserved for a request option", name)
	}
	typeText, rest := splitType(strings.TrimSpace(rest))
	if typeText == "" {
		return Param{}, fmt.Errorf("%s has no type", name)
	}
	typ, err := chtype.Parse(typeText)
	if err != nil {
		return Param{}, fmt.Errorf("%s: %w", name, err)
	}
	if !typ.Supported() {
		return Param{}, fmt.Errorf("%s: type %s cannot be a parameter", name, typeText)
	}
	prm := Param{Name: name, Type: typ}
	word, after, _ := strings.Cut(rest, " ")
	switch word {
	case "required":
		prm.Required = true
		rest = after
	case "default":
		dec := json.NewDecoder(strings.NewReader(after))
		dec.UseNumber()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Param{}, fmt.Errorf("%s: default is not a JSON value: %v", name, err)
		}
		canon, err := typ.Canonical(bytes.TrimSpace(raw))
		if err != nil {
			return Param{}, fmt.Errorf("%s: default %s: %w", name, raw, err)
		}
		prm.Default = canon
		rest = after[dec.InputOffset():]
	default:
		if !typ.IsNullable() {
			return Param{}, fmt.Errorf("%s: say required or give a default (only a Nullable parameter may be omitted without one)", name)
		}
		prm.Default = json.RawMessage("null")
	}
	prm.Description = strings.TrimSpace(rest)
	return prm, nil
}

// splitType cuts a type (which may hold parentheses, quotes and spaces inside them) off the
// front of s.
func splitType(s string) (typ, rest string) {
	depth, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '\'':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case (c == ' ' || c == '\t') && depth == 0:
			return s[:i], strings.TrimSpace(s[i:])
		}
	}
	return s, ""
}
