package chtype

import (
	"unicode/utf16"
	"unicode/utf8"
)

// AppendUnquote appends the text of the JSON string raw (with its quotes) to dst, decoding it
// exactly as encoding/json does: the escapes \" \\ \/ \b \f \n \r \t \uXXXX, a surrogate pair as
// one rune, a lone surrogate or invalid UTF-8 byte as U+FFFD. ok is false, and dst is returned
// unchanged, when raw is not a valid JSON string.
func AppendUnquote(dst, raw []byte) (out []byte, ok bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return dst, false
	}
	s := raw[1 : len(raw)-1]
	out = dst
	start := 0 // s[start:i] is plain text not yet copied
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			out = append(out, s[start:i]...)
			n, ok := appendEscape(&out, s[i:])
			if !ok {
				return dst, false
			}
			i += n
			start = i
		case c == '"' || c < 0x20:
			return dst, false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, s[start:i]...)
				out = utf8.AppendRune(out, utf8.RuneError)
				start = i + 1
			}
			i += size
		}
	}
	return append(out, s[start:]...), true
}

// appendEscape decodes the escape sequence at the start of s (s[0] == '\\') onto *out and
// returns how many bytes it took.
func appendEscape(out *[]byte, s []byte) (int, bool) {
	if len(s) < 2 {
		return 0, false
	}
	switch s[1] {
	case '"', '\\', '/':
		*out = append(*out, s[1])
	case 'b':
		*out = append(*out, '\b')
	case 'f':
		*out = append(*out, '\f')
	case 'n':
		*out = append(*out, '\n')
	case 'r':
		*out = append(*out, '\r')
	case 't':
		*out = append(*out, '\t')
	case 'u':
		r, ok := hex4(s[2:])
		if !ok {
			return 0, false
		}
		if utf16.IsSurrogate(r) {
			if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
				r2, ok := hex4(s[8:])
				if !ok {
					return 0, false
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					*out = utf8.AppendRune(*out, d)
					return 12, true
				}
			}
			r = utf8.RuneError
		}
		*out = utf8.AppendRune(*out, r)
		return 6, true
	default:
		return 0, false
	}
	return 2, true
}

// hex4 reads four hex digits.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
