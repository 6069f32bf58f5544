package chformat

import "fmt"

// expected is the columns a caller expects a body's own header (RowBinaryWithNamesAndTypes, or
// a Native block) to name.
type expected struct {
	names, types []string
	index        map[string]int
}

func newExpected(names, types []string) *expected {
	if len(names) == 0 {
		return nil
	}
	e := &expected{names: names, types: types, index: make(map[string]int, len(names))}
	for i, n := range names {
		e.index[n] = i
	}
	return e
}

// conform returns the type a body column named name, declared typ in the body, is read with.
// The column must be one of the expected ones, and its type the expected one up to what the
// data's bytes do not carry:
//   - time zones of DateTime and DateTime64: ClickHouse drops DateTime's from the types of the
//     Native it writes at revision 0, and a value is the same instant in any zone. The column is
//     read with the expected type, so its values are canonical in the table's zone — read with
//     the body's zone-less type they would be UTC wall-clock text, which the table's type would
//     take for its own zone's;
//   - LowCardinality wrappers, in RowBinary only (a value is its inner type's bytes there; in
//     Native the dictionary is layout, so a Native body must declare it as the table does).
//
// Any other difference wraps ErrHeaderMismatch and names the column.
func (e *expected) conform(name, typ string, native bool) (string, error) {
	i, ok := e.index[name]
	if !ok {
		return "", fmt.Errorf("%w: column %q in the body is not one of the expected columns", ErrHeaderMismatch, name)
	}
	want := e.types[i]
	b, w := squeeze(nil, typ), squeeze(nil, want)
	if !native {
		b, w = stripLowCardinality(b), stripLowCardinality(w)
	}
	if string(b) == string(w) || string(stripZones(b)) == string(stripZones(w)) {
		return want, nil
	}
	return "", fmt.Errorf("%w: column %q has type %s in the body, the expected type is %s", ErrHeaderMismatch, name, typ, want)
}

// sameType compares type strings ignoring white space outside quoted literals.
func sameType(a, b string) bool {
	return string(squeeze(nil, a)) == string(squeeze(nil, b))
}

// squeeze appends s without the white space outside its quoted literals.
func squeeze(dst []byte, s string) []byte {
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\\' && i+1 < len(s):
			dst = append(dst, c, s[i+1])
			i++
			continue
		case c == '\'':
			quoted = !quoted
		case !quoted && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// word reports whether s[i:] starts with the identifier w (not the tail of a longer one).
func word(s []byte, i int, w string) bool {
	if i > 0 && isIdentByte(s[i-1]) || len(s)-i < len(w) || string(s[i:i+len(w)]) != w {
		return false
	}
	return i+len(w) == len(s) || !isIdentByte(s[i+len(w)])
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// quotedEnd returns the index just past the quoted literal whose opening quote is s[i], or -1.
func quotedEnd(s []byte, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '\'':
			return j + 1
		}
	}
	return -1
}

// stripZones removes the time zone arguments of DateTime('z') and DateTime64(p, 'z') from a
// squeezed type string.
func stripZones(s []byte) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		switch {
		case s[i] == '\'':
			end := quotedEnd(s, i)
			if end < 0 {
				return append(out, s[i:]...)
			}
			out, i = append(out, s[i:end]...), end
			continue
		case word(s, i, "DateTime") && i+9 < len(s) && s[i+8] == '(' && s[i+9] == '\'':
			if end := quotedEnd(s, i+9); end > 0 && end < len(s) && s[end] == ')' {
				out, i = append(out, "DateTime"...), end+1
				continue
			}
		case s[i] == ',' && i+1 < len(s) && s[i+1] == '\'' && inDateTime64(s, i):
			if end := quotedEnd(s, i+1); end > 0 && end < len(s) && s[end] == ')' {
				i = end
				continue
			}
		}
		out = append(out, s[i])
		i++
	}
	return out
}

// inDateTime64 reports whether the comma at s[i] follows "DateTime64(<digits>".
func inDateTime64(s []byte, i int) bool {
	j := i
	for j > 0 && s[j-1] >= '0' && s[j-1] <= '9' {
		j--
	}
	const w = "DateTime64("
	return j < i && j >= len(w) && word(s, j-len(w), "DateTime64") && s[j-1] == '('
}

// stripLowCardinality removes every LowCardinality(…) wrapper from a squeezed type string.
func stripLowCardinality(s []byte) []byte {
	const w = "LowCardinality("
	out := make([]byte, 0, len(s))
	depth := 0
	var closes []int // depths at which a removed wrapper's ')' is due
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			end := quotedEnd(s, i)
			if end < 0 {
				return append(out, s[i:]...)
			}
			out = append(out, s[i:end]...)
			i = end - 1
			continue
		case word(s, i, "LowCardinality") && i+len(w) <= len(s) && s[i+len(w)-1] == '(':
			depth++
			closes = append(closes, depth)
			i += len(w) - 1
			continue
		case c == '(':
			depth++
		case c == ')':
			if n := len(closes); n > 0 && closes[n-1] == depth {
				closes = closes[:n-1]
				depth--
				continue
			}
			depth--
		}
		out = append(out, c)
	}
	return out
}
