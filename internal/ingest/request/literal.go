package request

import (
	"bytes"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// literal converts a value written in ClickHouse's text literal syntax — the form Array, Tuple
// and Map columns take in the CSV and TabSeparated formats: [1,2], ['a','b'], (1,'x'),
// {'k':1} — to the JSON that chtype validates. Strings may be in single or double quotes with
// backslash escapes (or a doubled quote); NULL is null; a bare word that is not a JSON number
// becomes a string, so the column type decides whether it is acceptable.
type literal struct {
	s   []byte
	i   int
	buf []byte // the decoded text of the current string
}

// appendLiteral appends the JSON form of s to dst; ok is false when s is not one literal.
func (l *literal) appendLiteral(dst, s []byte) (out []byte, ok bool) {
	l.s, l.i = s, 0
	out, ok = l.value(dst, 0)
	l.ws()
	l.s = nil
	return out, ok && l.i == len(s)
}

func (l *literal) ws() {
	for l.i < len(l.s) && isSpace(l.s[l.i]) {
		l.i++
	}
}

func (l *literal) value(dst []byte, depth int) ([]byte, bool) {
	l.ws()
	if l.i >= len(l.s) || depth > maxDepth {
		return dst, false
	}
	switch l.s[l.i] {
	case '[':
		return l.list(dst, ']', depth)
	case '(':
		return l.list(dst, ')', depth)
	case '{':
		return l.object(dst, depth)
	case '\'', '"':
		return l.quoted(dst)
	}
	return l.bare(dst)
}

// list converts [a,b] or (a,b) to a JSON array.
func (l *literal) list(dst []byte, end byte, depth int) ([]byte, bool) {
	l.i++
	dst = append(dst, '[')
	l.ws()
	if l.i < len(l.s) && l.s[l.i] == end {
		l.i++
		return append(dst, ']'), true
	}
	for {
		var ok, done bool
		if dst, ok = l.value(dst, depth+1); !ok {
			return dst, false
		}
		if dst, done, ok = l.after(dst, end); !ok || done {
			return dst, ok
		}
	}
}

// after consumes what follows an element: a comma (more to come) or the closing byte end, which
// it writes as JSON closes the same container.
func (l *literal) after(dst []byte, end byte) (out []byte, done, ok bool) {
	l.ws()
	if l.i >= len(l.s) {
		return dst, false, false
	}
	switch l.s[l.i] {
	case ',':
		l.i++
		return append(dst, ','), false, true
	case end:
		l.i++
		if end == ')' {
			end = ']'
		}
		return append(dst, end), true, true
	}
	return dst, false, false
}

// object converts {k:v,…} to a JSON object; a key that is not a string (a number) is quoted.
func (l *literal) object(dst []byte, depth int) ([]byte, bool) {
	l.i++
	dst = append(dst, '{')
	l.ws()
	if l.i < len(l.s) && l.s[l.i] == '}' {
		l.i++
		return append(dst, '}'), true
	}
	for {
		var ok bool
		keyAt := len(dst)
		if dst, ok = l.value(dst, depth+1); !ok {
			return dst, false
		}
		if dst[keyAt] != '"' {
			l.buf = append(l.buf[:0], dst[keyAt:]...)
			dst = chtype.AppendString(dst[:keyAt], l.buf)
		}
		l.ws()
		if l.i >= len(l.s) || l.s[l.i] != ':' {
			return dst, false
		}
		l.i++
		dst = append(dst, ':')
		if dst, ok = l.value(dst, depth+1); !ok {
			return dst, false
		}
		var done bool
		if dst, done, ok = l.after(dst, '}'); !ok || done {
			return dst, ok
		}
	}
}

// quoted converts a single- or double-quoted string with backslash escapes.
func (l *literal) quoted(dst []byte) ([]byte, bool) {
	q := l.s[l.i]
	l.i++
	l.buf = l.buf[:0]
	for l.i < len(l.s) {
		c := l.s[l.i]
		switch {
		case c == '\\' && l.i+1 < len(l.s):
			b, n := unescape(l.s[l.i+1:])
			l.buf = append(l.buf, b)
			l.i += 1 + n
		case c == q && l.i+1 < len(l.s) && l.s[l.i+1] == q:
			l.buf = append(l.buf, q)
			l.i += 2
		case c == q:
			l.i++
			return chtype.AppendString(dst, l.buf), true
		default:
			l.buf = append(l.buf, c)
			l.i++
		}
	}
	return dst, false
}

// bare converts an unquoted token: NULL, true/false, a number, or any other word as a string.
func (l *literal) bare(dst []byte) ([]byte, bool) {
	j := l.i
	for j < len(l.s) && !isSpace(l.s[j]) && bytes.IndexByte([]byte(",:[](){}'\""), l.s[j]) < 0 {
		j++
	}
	tok := l.s[l.i:j]
	l.i = j
	switch {
	case len(tok) == 0:
		return dst, false
	case bytes.EqualFold(tok, []byte("null")):
		return append(dst, "null"...), true
	case bytes.EqualFold(tok, []byte("true")):
		return append(dst, "true"...), true
	case bytes.EqualFold(tok, []byte("false")):
		return append(dst, "false"...), true
	}
	if n, ok := numberText(tok); ok {
		return append(dst, n...), true
	}
	return chtype.AppendString(dst, tok), true
}

// numberText returns s as a JSON number, dropping the leading '+' ClickHouse allows; ok is false
// when s is not a number.
func numberText(s []byte) ([]byte, bool) {
	if len(s) > 1 && s[0] == '+' {
		s = s[1:]
	}
	return s, chtype.IsNumber(s)
}
