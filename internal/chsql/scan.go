package chsql

import (
	"fmt"
	"strings"
)

// scanner walks a statement's text token by token.
type scanner struct {
	src string
	i   int
}

// skip moves past whitespace and comments. An unclosed /* comment runs to the end.
func (s *scanner) skip() {
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			s.i++
		case c == '-' && strings.HasPrefix(s.src[s.i:], "--"), c == '#' && strings.HasPrefix(s.src[s.i:], "# "):
			if k := strings.IndexByte(s.src[s.i:], '\n'); k >= 0 {
				s.i += k + 1
			} else {
				s.i = len(s.src)
			}
		case c == '/' && strings.HasPrefix(s.src[s.i:], "/*"):
			if k := strings.Index(s.src[s.i+2:], "*/"); k >= 0 {
				s.i += k + 4
			} else {
				s.i = len(s.src)
			}
		default:
			return
		}
	}
}

func isWordStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isWordByte(c byte) bool { return isWordStart(c) || c >= '0' && c <= '9' }

// word reads a bare word after whitespace; ok is false (and nothing is consumed) when the next
// token is not one.
func (s *scanner) word() (string, bool) {
	s.skip()
	if s.i >= len(s.src) || !isWordStart(s.src[s.i]) {
		return "", false
	}
	start := s.i
	for s.i < len(s.src) && isWordByte(s.src[s.i]) {
		s.i++
	}
	return s.src[start:s.i], true
}

// peekKeyword reports whether the next token is the keyword kw, consuming nothing.
func (s *scanner) peekKeyword(kw string) bool {
	save := s.i
	w, ok := s.word()
	s.i = save
	return ok && strings.EqualFold(w, kw)
}

// keyword consumes the keyword kw or fails.
func (s *scanner) keyword(kw string) error {
	s.skip()
	if s.i >= len(s.src) {
		return ErrIncomplete
	}
	save := s.i
	if w, ok := s.word(); ok && strings.EqualFold(w, kw) {
		return nil
	}
	s.i = save
	return s.expected(kw)
}

// ident reads a bare, backquoted or double-quoted identifier.
func (s *scanner) ident(what string) (string, error) {
	s.skip()
	if s.i >= len(s.src) {
		return "", ErrIncomplete
	}
	switch c := s.src[s.i]; {
	case c == '`' || c == '"':
		v, err := s.quoted(c)
		if err == nil && v == "" {
			s.i--
			return "", s.expected(what + " (an empty quoted name)")
		}
		return v, err
	case isWordStart(c):
		w, _ := s.word()
		return w, nil
	}
	return "", s.expected(what)
}

// quoted reads a literal or identifier quoted with q at s.i: a backslash escapes the next byte
// (\n, \t and the like decode), and a doubled q stands for q.
func (s *scanner) quoted(q byte) (string, error) {
	open := s.i
	s.i++
	var b strings.Builder
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '\\':
			if s.i+1 >= len(s.src) {
				return "", ErrIncomplete
			}
			b.WriteByte(unescape(s.src[s.i+1]))
			s.i += 2
		case c == q && s.i+1 < len(s.src) && s.src[s.i+1] == q:
			b.WriteByte(q)
			s.i += 2
		case c == q:
			s.i++
			return b.String(), nil
		default:
			b.WriteByte(c)
			s.i++
		}
	}
	s.i = open
	return "", ErrIncomplete
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	case '0':
		return 0
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	}
	return c
}

// expected is a syntax error at the current position naming what was wanted and what is there.
func (s *scanner) expected(what string) *SyntaxError {
	found := "end of query"
	if s.i < len(s.src) {
		r := s.src[s.i:]
		if len(r) > 20 {
			r = r[:20] + "…"
		}
		found = fmt.Sprintf("%q", r)
	}
	return &SyntaxError{Pos: s.i, Msg: fmt.Sprintf("expected %s, found %s", what, found)}
}
