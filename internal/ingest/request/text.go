package request

import "bytes"

// This file splits CSV and TSV bodies into records and fields, following ClickHouse's CSV and
// TabSeparated input rules, without copying: a field is a span of the body, decoded only when
// its column needs the text.

// textField is one field of a CSV or TSV record.
type textField struct {
	// start and end delimit the field's bytes in the body; for a quoted CSV field, the bytes
	// between the quotes.
	start, end int
	// quoted is set for a CSV field in double quotes.
	quoted bool
	// escaped is set when the bytes need decoding: "" pairs in a quoted CSV field, backslash
	// escapes in a TSV field.
	escaped bool
}

// textScanner walks a CSV or TSV body record by record.
type textScanner struct {
	b    []byte
	i    int
	line int // the 1-based line of the body at i
	sep  byte
	tsv  bool
}

// atEnd reports whether only line breaks remain: blank lines at the end of a body are not rows.
func (s *textScanner) atEnd() bool {
	for j := s.i; j < len(s.b); j++ {
		if s.b[j] != '\n' && s.b[j] != '\r' {
			return false
		}
	}
	return true
}

// record appends the fields of the record at s.i to fields and moves past its line break.
func (s *textScanner) record(fields []textField) ([]textField, *syntaxError) {
	if s.tsv {
		return s.tsvRecord(fields)
	}
	for {
		f, err := s.csvField()
		if err != nil {
			return fields, err
		}
		fields = append(fields, f)
		if s.i >= len(s.b) {
			return fields, nil
		}
		c := s.b[s.i]
		s.i++
		if c == s.sep {
			continue
		}
		// A line ends with LF, CR LF or a lone CR, as ClickHouse accepts.
		if c == '\r' && s.i < len(s.b) && s.b[s.i] == '\n' {
			s.i++
		}
		s.line++
		return fields, nil
	}
}

// isBlank reports whether c is trimmed around an unquoted CSV field (spaces and tabs, unless
// the delimiter is one of them).
func (s *textScanner) isBlank(c byte) bool { return (c == ' ' || c == '\t') && c != s.sep }

// csvField scans one field and leaves s.i at the delimiter, the line break or the end.
func (s *textScanner) csvField() (textField, *syntaxError) {
	b, i := s.b, s.i
	for i < len(b) && s.isBlank(b[i]) {
		i++
	}
	if i < len(b) && b[i] == '"' {
		open := i
		j, esc := i+1, false
		for {
			k := bytes.IndexByte(b[j:], '"')
			if k < 0 {
				return textField{}, &syntaxError{off: open, msg: "a quoted field is not closed"}
			}
			j += k
			if j+1 < len(b) && b[j+1] == '"' {
				esc = true
				j += 2
				continue
			}
			break
		}
		s.line += bytes.Count(b[open+1:j], []byte{'\n'})
		f := textField{start: open + 1, end: j, quoted: true, escaped: esc}
		i = j + 1
		for i < len(b) && s.isBlank(b[i]) {
			i++
		}
		if i < len(b) && b[i] != s.sep && b[i] != '\n' && b[i] != '\r' {
			return textField{}, &syntaxError{off: i, msg: "unexpected " + describe(b[i]) + " after a closing quote, want the delimiter or a line break"}
		}
		s.i = i
		return f, nil
	}
	j := i
	for j < len(b) && b[j] != s.sep && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	e := j
	for e > i && s.isBlank(b[e-1]) {
		e--
	}
	s.i = j
	return textField{start: i, end: e}, nil
}

// tsvStop marks the bytes a TSV field scan stops at.
var tsvStop = func() (t [256]bool) {
	t['\t'], t['\n'], t['\r'], t['\\'] = true, true, true, true
	return t
}()

// tsvRecord scans a TabSeparated record. A backslash escapes the next byte (so an escaped tab or
// line break is data); a line ends with LF or CR LF.
func (s *textScanner) tsvRecord(fields []textField) ([]textField, *syntaxError) {
	b, i := s.b, s.i
	start, esc := i, false
	for {
		for i < len(b) && !tsvStop[b[i]] {
			i++
		}
		if i >= len(b) {
			s.i = i
			return append(fields, textField{start: start, end: i, escaped: esc}), nil
		}
		switch b[i] {
		case '\t':
			fields = append(fields, textField{start: start, end: i, escaped: esc})
			i++
			start, esc = i, false
		case '\n':
			s.i, s.line = i+1, s.line+1
			return append(fields, textField{start: start, end: i, escaped: esc}), nil
		case '\r':
			if i+1 < len(b) && b[i+1] == '\n' {
				s.i, s.line = i+2, s.line+1
				return append(fields, textField{start: start, end: i, escaped: esc}), nil
			}
			i++
		default: // '\\'
			if i+1 >= len(b) {
				return fields, &syntaxError{off: i, msg: "the body ends with a backslash"}
			}
			if b[i+1] == '\n' {
				s.line++
			}
			esc = true
			i += 2
		}
	}
}

// appendCSVUnquote appends the content of a quoted CSV field with each "" turned into ".
func appendCSVUnquote(dst, raw []byte) []byte {
	for {
		k := bytes.IndexByte(raw, '"')
		if k < 0 {
			return append(dst, raw...)
		}
		dst = append(dst, raw[:k+1]...)
		raw = raw[k+2:]
	}
}

// appendTSVUnescape appends raw with its backslash escapes decoded.
func appendTSVUnescape(dst, raw []byte) []byte {
	for {
		k := bytes.IndexByte(raw, '\\')
		if k < 0 || k+1 >= len(raw) {
			return append(dst, raw...)
		}
		dst = append(dst, raw[:k]...)
		c, n := unescape(raw[k+1:])
		dst = append(dst, c)
		raw = raw[k+1+n:]
	}
}

// unescape decodes the escape whose first byte after the backslash is s[0] (s is not empty),
// returning the byte and how many bytes of s it used. These are ClickHouse's escapes for
// TabSeparated and quoted strings: \b \f \n \r \t \0 \a \v, \xHH, and \c for any other c
// (so \\ \' \" and an escaped line break or tab stand for themselves).
func unescape(s []byte) (byte, int) {
	switch s[0] {
	case 'b':
		return '\b', 1
	case 'f':
		return '\f', 1
	case 'n':
		return '\n', 1
	case 'r':
		return '\r', 1
	case 't':
		return '\t', 1
	case '0':
		return 0, 1
	case 'a':
		return '\a', 1
	case 'v':
		return '\v', 1
	case 'x':
		if len(s) >= 3 {
			if h, ok := unhex(s[1]); ok {
				if l, ok := unhex(s[2]); ok {
					return h<<4 | l, 3
				}
			}
		}
	}
	return s[0], 1
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
