package chtype

import "unicode/utf8"

// trimWS removes JSON insignificant whitespace around a value.
func trimWS(b []byte) []byte {
	for len(b) > 0 && isWS(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isWS(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func jsonKindName(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// skipString returns the index just past the JSON string starting at b[i] == '"', or -1.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// SkipValue returns the index just past the JSON value starting at b[i] (no leading
// whitespace), or -1 when it is not terminated, and i itself when b[i] starts no value. It checks
// only bracket balance and string termination: a bare token ends at the first delimiter
// (, ] } : or whitespace) whatever it holds.
func SkipValue(b []byte, i int) int { return skipValue(b, i) }

// skipValue returns the index just past the JSON value starting at b[i] (no leading whitespace),
// or -1 when it is not terminated. It checks only bracket balance; elements are validated by
// their own types.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '[', '{':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				j := skipString(b, i)
				if j < 0 {
					return -1
				}
				i = j - 1
			case '[', '{':
				depth++
				if depth > 512 {
					return -1
				}
			case ']', '}':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r', ':':
			return i
		}
	}
	return i
}

// splitObject calls fn with each raw key (a JSON string) and value of the JSON object raw.
func splitObject(raw []byte, fn func(key, val []byte) error) (bool, error) {
	raw = trimWS(raw)
	if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return false, nil
	}
	i, n := 1, 0
	for {
		for i < len(raw) && isWS(raw[i]) {
			i++
		}
		if i < len(raw) && raw[i] == '}' && n == 0 {
			return i == len(raw)-1, nil
		}
		if i >= len(raw) || raw[i] != '"' {
			return false, nil
		}
		k := skipString(raw, i)
		if k < 0 {
			return false, nil
		}
		key := raw[i:k]
		for k < len(raw) && isWS(raw[k]) {
			k++
		}
		if k >= len(raw) || raw[k] != ':' {
			return false, nil
		}
		k++
		for k < len(raw) && isWS(raw[k]) {
			k++
		}
		j := skipValue(raw, k)
		if j < 0 || j == k {
			return false, nil
		}
		if err := fn(key, raw[k:j]); err != nil {
			return true, err
		}
		n++
		for j < len(raw) && isWS(raw[j]) {
			j++
		}
		if j >= len(raw) {
			return false, nil
		}
		switch raw[j] {
		case ',':
			i = j + 1
		case '}':
			return j == len(raw)-1, nil
		default:
			return false, nil
		}
	}
}

// plainString returns the content of the JSON string raw (with quotes) when it needs no
// decoding: valid UTF-8 without escapes or control characters.
func plainString(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' || c == '"' || c < 0x20 {
			return nil, false
		}
	}
	return inner, utf8.Valid(inner)
}

// unquote decodes the JSON string raw (with quotes). ok is false when raw is not a valid string.
func unquote(raw []byte) (string, bool) {
	if inner, ok := plainString(raw); ok {
		return string(inner), true
	}
	b, ok := AppendUnquote(nil, raw)
	if !ok {
		return "", false
	}
	return string(b), true
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string exactly as canonical values spell strings: only what
// JSON requires is escaped, and invalid UTF-8 becomes U+FFFD so the output is always valid JSON.
// It lets a decoder of another text format hand strings to [Type.AppendCanonical] as JSON.
func AppendString[S string | []byte](dst []byte, s S) []byte { return appendString(dst, s) }

// appendString appends s as a JSON string, escaping only what JSON requires; invalid UTF-8
// becomes U+FFFD so the output is always valid JSON.
func appendString[S string | []byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		// At most UTFMax bytes are converted, which the compiler does on the stack.
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// IsNumber reports whether b is exactly one JSON number token (no sign but '-', no leading
// zeros, no surrounding whitespace).
func IsNumber(b []byte) bool { return isNumber(b) }

// isNumber reports whether b is a JSON number token.
func isNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return false
	}
	if b[i] == '0' {
		i++
	} else if b[i] >= '1' && b[i] <= '9' {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	} else {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == s {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == s {
			return false
		}
	}
	return i == len(b)
}

// isInteger reports whether b is an optionally signed run of decimal digits.
func isInteger(b []byte) bool {
	i := 0
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		i++
	}
	if i >= len(b) {
		return false
	}
	for ; i < len(b); i++ {
		if b[i] < '0' || b[i] > '9' {
			return false
		}
	}
	return true
}
