package query

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/wavehouse/wavehouse/internal/chformat"
	"github.com/wavehouse/wavehouse/internal/chtype"
)

// The ClickHouse text forms of a value, written from its canonical JSON (chtype) the way a
// current ClickHouse server writes it with default settings.
type textStyle uint8

const (
	// styleEscaped is TabSeparated's form of a column value: strings with \t \n \\ \' … escaped,
	// NULL as \N, composite values in their quoted form.
	styleEscaped textStyle = iota
	// styleQuoted is the form of a value inside an Array, Tuple or Map: strings and dates in
	// single quotes, NULL as NULL.
	styleQuoted
	// styleCSV is CSV's form of a column value: strings in double quotes ("" doubled), NULL as
	// \N, a Tuple's elements as separate fields, other composite values as their quoted form
	// in double quotes.
	styleCSV
)

// jsonOpts are the settings of ClickHouse's JSON value form.
type jsonOpts struct {
	// quote64 writes integers of 64 bits and more as JSON strings
	// (output_format_json_quote_64bit_integers, 1 by default).
	quote64 bool
	// pretty writes Tuple and Map values over several lines, indented, as the JSON format
	// (not JSONCompact or JSONEachRow) does (output_format_json_pretty_print).
	pretty bool
}

var errMalformedValue = errors.New("query: malformed result value")

// appendText appends the text form of the canonical value v of type t.
func appendText(dst []byte, t *chtype.Type, v []byte, st textStyle) ([]byte, error) {
	if isNull(v) {
		if st == styleQuoted {
			return append(dst, "NULL"...), nil
		}
		return append(dst, `\N`...), nil
	}
	switch t.Kind {
	case chtype.Nullable, chtype.LowCardinality:
		return appendText(dst, t.Elem, v, st)
	case chtype.Array:
		return appendComposite(dst, st, func(b []byte) ([]byte, error) {
			b = append(b, '[')
			var err error
			b, err = appendElems(b, v, func(b []byte, i int, e []byte) ([]byte, error) {
				if i > 0 {
					b = append(b, ',')
				}
				return appendText(b, t.Elem, e, styleQuoted)
			})
			return append(b, ']'), err
		})
	case chtype.Tuple:
		if st == styleCSV {
			return appendElems(dst, v, func(b []byte, i int, e []byte) ([]byte, error) {
				if i >= len(t.Fields) {
					return b, errMalformedValue
				}
				if i > 0 {
					b = append(b, ',')
				}
				return appendText(b, t.Fields[i].Type, e, styleCSV)
			})
		}
		b := append(dst, '(')
		b, err := appendElems(b, v, func(b []byte, i int, e []byte) ([]byte, error) {
			if i >= len(t.Fields) {
				return b, errMalformedValue
			}
			if i > 0 {
				b = append(b, ',')
			}
			return appendText(b, t.Fields[i].Type, e, styleQuoted)
		})
		return append(b, ')'), err
	case chtype.Map:
		return appendComposite(dst, st, func(b []byte) ([]byte, error) {
			b = append(b, '{')
			var err error
			b, err = appendMembers(b, v, func(b []byte, i int, k, e []byte) ([]byte, error) {
				if i > 0 {
					b = append(b, ',')
				}
				b, err := appendText(b, t.Key, chformat.MapKey(t.Key, k), styleQuoted)
				if err != nil {
					return b, err
				}
				b = append(b, ':')
				return appendText(b, t.Value, e, styleQuoted)
			})
			return append(b, '}'), err
		})
	}
	if t.Kind == chtype.JSON {
		return appendTextString(dst, v, st), nil
	}
	s, kind := scalar(t, v)
	switch kind {
	case scalarBare:
		return append(dst, s...), nil
	case scalarFloat:
		return appendFloat(dst, s), nil
	case scalarDecimal:
		return appendDecimal(dst, s), nil
	}
	raw, ok := chtype.AppendUnquote(nil, v)
	if !ok {
		return dst, errMalformedValue
	}
	if t.Kind == chtype.Float32 || t.Kind == chtype.Float64 {
		return append(dst, raw...), nil // nan, inf, -inf
	}
	return appendTextString(dst, raw, st), nil
}

// appendTextString writes the string s in style st.
func appendTextString(dst, s []byte, st textStyle) []byte {
	switch st {
	case styleEscaped:
		return appendEscaped(dst, s)
	case styleQuoted:
		dst = append(dst, '\'')
		dst = appendEscaped(dst, s)
		return append(dst, '\'')
	}
	return appendCSVQuoted(dst, s)
}

// appendComposite writes an Array's or Map's text form: as it is, or in CSV inside double
// quotes.
func appendComposite(dst []byte, st textStyle, text func([]byte) ([]byte, error)) ([]byte, error) {
	if st != styleCSV {
		return text(dst)
	}
	inner, err := text(nil)
	if err != nil {
		return dst, err
	}
	return appendCSVQuoted(dst, inner), nil
}

// appendJSON appends ClickHouse's JSON form of the canonical value v of type t; indent is the
// number of tabs the value's line starts with (for the pretty form).
func appendJSON(dst []byte, t *chtype.Type, v []byte, o jsonOpts, indent int) ([]byte, error) {
	if isNull(v) {
		return append(dst, "null"...), nil
	}
	switch t.Kind {
	case chtype.Nullable, chtype.LowCardinality:
		return appendJSON(dst, t.Elem, v, o, indent)
	case chtype.Array:
		pretty := o.pretty && isComposite(t.Elem)
		return appendJSONList(dst, v, '[', ']', pretty, indent, func(b []byte, i int, e []byte) ([]byte, error) {
			return appendJSON(b, t.Elem, e, o, indent+1)
		})
	case chtype.Tuple:
		named := len(t.Fields) > 0 && t.Fields[0].Name != ""
		if !named {
			return appendJSONList(dst, v, '[', ']', o.pretty, indent, func(b []byte, i int, e []byte) ([]byte, error) {
				if i >= len(t.Fields) {
					return b, errMalformedValue
				}
				return appendJSON(b, t.Fields[i].Type, e, o, indent+1)
			})
		}
		return appendJSONList(dst, v, '{', '}', o.pretty, indent, func(b []byte, i int, e []byte) ([]byte, error) {
			if i >= len(t.Fields) {
				return b, errMalformedValue
			}
			b = appendJSONString(b, []byte(t.Fields[i].Name))
			b = append(b, ':')
			if o.pretty {
				b = append(b, ' ')
			}
			return appendJSON(b, t.Fields[i].Type, e, o, indent+1)
		})
	case chtype.Map:
		b := append(dst, '{')
		n := 0
		b, err := appendMembers(b, v, func(b []byte, i int, k, e []byte) ([]byte, error) {
			n++
			if i > 0 {
				b = append(b, ',')
			}
			if o.pretty {
				b = appendNewline(b, indent+1)
			}
			key, ok := chtype.AppendUnquote(nil, k)
			if !ok {
				return b, errMalformedValue
			}
			b = appendJSONString(b, key)
			b = append(b, ':')
			if o.pretty {
				b = append(b, ' ')
			}
			return appendJSON(b, t.Value, e, o, indent+1)
		})
		if o.pretty && n > 0 {
			b = appendNewline(b, indent)
		}
		return append(b, '}'), err
	case chtype.JSON:
		return append(dst, v...), nil
	}
	s, kind := scalar(t, v)
	switch kind {
	case scalarBare:
		if o.quote64 && isWideInt(t.Kind) {
			dst = append(dst, '"')
			dst = append(dst, s...)
			return append(dst, '"'), nil
		}
		return append(dst, s...), nil
	case scalarFloat:
		return appendFloat(dst, s), nil
	case scalarDecimal:
		return appendDecimal(dst, s), nil
	}
	raw, ok := chtype.AppendUnquote(nil, v)
	if !ok {
		return dst, errMalformedValue
	}
	if t.Kind == chtype.Float32 || t.Kind == chtype.Float64 {
		return append(dst, "null"...), nil // nan, inf: ClickHouse writes null (output_format_json_quote_denormals = 0)
	}
	return appendJSONString(dst, raw), nil
}

// appendJSONList writes the JSON array v as a list between open and close, each element by
// elem; pretty puts every element on its own line.
func appendJSONList(dst, v []byte, open, close byte, pretty bool, indent int, elem func([]byte, int, []byte) ([]byte, error)) ([]byte, error) {
	b := append(dst, open)
	n := 0
	b, err := appendElems(b, v, func(b []byte, i int, e []byte) ([]byte, error) {
		n++
		if i > 0 {
			b = append(b, ',')
		}
		if pretty {
			b = appendNewline(b, indent+1)
		}
		return elem(b, i, e)
	})
	if pretty && n > 0 {
		b = appendNewline(b, indent)
	}
	return append(b, close), err
}

func appendNewline(b []byte, indent int) []byte {
	b = append(b, '\n')
	for range indent {
		b = append(b, '\t')
	}
	return b
}

// isComposite reports whether values of t are Arrays, Tuples or Maps: the pretty JSON form
// spreads an Array of them over lines (an Array of scalars stays on one).
func isComposite(t *chtype.Type) bool {
	switch t.Kind {
	case chtype.Nullable, chtype.LowCardinality:
		return isComposite(t.Elem)
	case chtype.Array, chtype.Tuple, chtype.Map:
		return true
	}
	return false
}

func isWideInt(k chtype.Kind) bool {
	switch k {
	case chtype.Int64, chtype.UInt64, chtype.Int128, chtype.UInt128, chtype.Int256, chtype.UInt256:
		return true
	}
	return false
}

func isNull(v []byte) bool { return len(v) == 4 && string(v) == "null" }

type scalarKind uint8

const (
	scalarString  scalarKind = iota // a JSON string in canonical form
	scalarBare                      // written as the canonical text (integers, booleans)
	scalarFloat                     // a canonical float, rewritten in ClickHouse's layout
	scalarDecimal                   // a canonical decimal, trailing zeros dropped
)

// scalar classifies the canonical value v of the scalar type t.
func scalar(t *chtype.Type, v []byte) ([]byte, scalarKind) {
	if len(v) == 0 || v[0] == '"' {
		return v, scalarString
	}
	switch t.Kind {
	case chtype.Float32, chtype.Float64:
		return v, scalarFloat
	case chtype.Decimal:
		return v, scalarDecimal
	}
	return v, scalarBare
}

// appendFloat writes the canonical float s (Go's shortest form, "1e+06") the way ClickHouse
// does: the same shortest digits, positional between 1e-6 and 1e21, otherwise d.ddde±x with
// no '+' and no leading exponent zeros ("1e-7", "1.5e300").
func appendFloat(dst, s []byte) []byte {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	mant, exp := s, 0
	if i := bytes.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.Atoi(string(s[i+1:]))
		if err != nil {
			return append(dst, s...)
		}
		exp = e
	}
	point := len(mant)
	digits := make([]byte, 0, len(mant))
	for i, c := range mant {
		if c == '.' {
			point = i
			continue
		}
		digits = append(digits, c)
	}
	point += exp
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
		point--
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if neg {
		dst = append(dst, '-')
	}
	if len(digits) == 0 {
		return append(dst, '0')
	}
	if e := point - 1; e < -6 || e >= 21 {
		dst = append(dst, digits[0])
		if len(digits) > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		return strconv.AppendInt(dst, int64(e), 10)
	}
	switch {
	case point <= 0:
		dst = append(dst, "0."...)
		for range -point {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	case point >= len(digits):
		dst = append(dst, digits...)
		for range point - len(digits) {
			dst = append(dst, '0')
		}
		return dst
	}
	dst = append(dst, digits[:point]...)
	dst = append(dst, '.')
	return append(dst, digits[point:]...)
}

// appendDecimal writes the canonical decimal s (exactly the scale's digits) without trailing
// fractional zeros, as ClickHouse does by default (output_format_decimal_trailing_zeros = 0).
func appendDecimal(dst, s []byte) []byte {
	if bytes.IndexByte(s, '.') >= 0 {
		s = bytes.TrimRight(s, "0")
		s = bytes.TrimSuffix(s, []byte("."))
	}
	if string(s) == "-0" {
		s = s[1:]
	}
	return append(dst, s...)
}

// appendEscaped escapes s as ClickHouse's TabSeparated and quoted forms do.
func appendEscaped(dst, s []byte) []byte {
	for _, c := range s {
		switch c {
		case '\b':
			dst = append(dst, `\b`...)
		case '\f':
			dst = append(dst, `\f`...)
		case '\n':
			dst = append(dst, `\n`...)
		case '\r':
			dst = append(dst, `\r`...)
		case '\t':
			dst = append(dst, `\t`...)
		case 0:
			dst = append(dst, `\0`...)
		case '\\':
			dst = append(dst, `\\`...)
		case '\'':
			dst = append(dst, `\'`...)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// appendCSVQuoted writes s in double quotes with quotes doubled.
func appendCSVQuoted(dst, s []byte) []byte {
	dst = append(dst, '"')
	for _, c := range s {
		if c == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

// appendJSONString writes s as a JSON string the way ClickHouse does: control characters as
// \b \f \n \r \t or \u00XX, '/' as \/ (output_format_json_escape_forward_slashes), U+2028 and
// U+2029 escaped; other bytes, invalid UTF-8 included, as they are.
func appendJSONString(dst, s []byte) []byte {
	const hex = "0123456789ABCDEF"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			dst = append(dst, `\"`...)
		case c == '\\':
			dst = append(dst, `\\`...)
		case c == '/':
			dst = append(dst, `\/`...)
		case c == '\b':
			dst = append(dst, `\b`...)
		case c == '\f':
			dst = append(dst, `\f`...)
		case c == '\n':
			dst = append(dst, `\n`...)
		case c == '\r':
			dst = append(dst, `\r`...)
		case c == '\t':
			dst = append(dst, `\t`...)
		case c < 0x20:
			dst = append(dst, `\u00`...)
			dst = append(dst, hex[c>>4], hex[c&0xF])
		case c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9):
			dst = append(dst, `\u202`...)
			dst = append(dst, "89"[s[i+2]-0xA8])
			i += 2
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// appendElems calls fn for each element of the JSON array v.
func appendElems(dst, v []byte, fn func(b []byte, i int, e []byte) ([]byte, error)) ([]byte, error) {
	var sc chtype.ArrayScanner
	sc.Reset(v)
	var err error
	for e, ok := sc.Next(); ok; e, ok = sc.Next() {
		if dst, err = fn(dst, sc.Len()-1, e); err != nil {
			return dst, err
		}
	}
	if !sc.Valid() {
		return dst, errMalformedValue
	}
	return dst, nil
}

// appendMembers calls fn for each member of the JSON object v, with the member name as raw
// JSON.
func appendMembers(dst, v []byte, fn func(b []byte, i int, k, e []byte) ([]byte, error)) ([]byte, error) {
	n := 0
	err := chformat.EachMember(v, func(k, e []byte) error {
		var err error
		dst, err = fn(dst, n, k, e)
		n++
		return err
	})
	if errors.Is(err, errMalformedValue) || err == nil {
		return dst, err
	}
	return dst, fmt.Errorf("%w: %w", errMalformedValue, err)
}
