package request

// This file is a validating JSON scanner over a complete body. It never builds values: it finds
// where each value starts and ends and checks the grammar, so the raw bytes can go straight to
// chtype. It was chosen over encoding/json by measurement (see bench_test.go and docs/ingest.md).

// maxDepth bounds the nesting of arrays and objects inside a row, so hostile input cannot
// exhaust the stack.
const maxDepth = 128

// syntaxError is a JSON grammar violation at a byte offset of the body.
type syntaxError struct {
	off int
	msg string
}

// strSafe marks the bytes that need no attention inside a JSON string.
var strSafe = func() (t [256]bool) {
	for i := range t {
		t[i] = i >= 0x20 && i != '"' && i != '\\'
	}
	return t
}()

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func eofError(b []byte) *syntaxError {
	return &syntaxError{off: len(b), msg: "unexpected end of input"}
}

func unexpected(b []byte, i int, want string) *syntaxError {
	if i >= len(b) {
		return eofError(b)
	}
	return &syntaxError{off: i, msg: "unexpected " + describe(b[i]) + ", want " + want}
}

func describe(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return "'" + string(rune(c)) + "'"
	}
	const hex = "0123456789abcdef"
	return "byte 0x" + string([]byte{hex[c>>4], hex[c&0xf]})
}

// scanString scans the JSON string starting at b[i] == '"'. It returns the index just past the
// closing quote and whether the string holds escapes.
func scanString(b []byte, i int) (int, bool, *syntaxError) {
	start := i
	i++
	esc := false
	for {
		for i < len(b) && strSafe[b[i]] {
			i++
		}
		if i >= len(b) {
			return 0, false, &syntaxError{off: start, msg: "unterminated string"}
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return 0, false, &syntaxError{off: start, msg: "unterminated string"}
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return 0, false, &syntaxError{off: i, msg: "invalid \\u escape in string"}
				}
				i += 6
			default:
				return 0, false, &syntaxError{off: i, msg: "invalid escape in string"}
			}
		default:
			return 0, false, &syntaxError{off: i, msg: "control character in string"}
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber scans the JSON number starting at b[i].
func scanNumber(b []byte, i int) (int, *syntaxError) {
	start := i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return 0, &syntaxError{off: start, msg: "invalid number"}
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return 0, &syntaxError{off: start, msg: "invalid number"}
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return 0, &syntaxError{off: start, msg: "invalid number"}
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, nil
}

func scanLiteral(b []byte, i int, lit string) (int, *syntaxError) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, &syntaxError{off: i, msg: "invalid literal"}
	}
	return i + len(lit), nil
}

// scanValue scans the JSON value starting at b[i] (no leading space) and returns the index
// just past it.
func scanValue(b []byte, i, depth int) (int, *syntaxError) {
	if i >= len(b) {
		return 0, eofError(b)
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := scanString(b, i)
		return end, err
	case c == '{':
		return scanObject(b, i, depth+1)
	case c == '[':
		return scanArray(b, i, depth+1)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	case c == '-' || isDigit(c):
		return scanNumber(b, i)
	}
	return 0, unexpected(b, i, "a value")
}

func scanArray(b []byte, i, depth int) (int, *syntaxError) {
	if depth > maxDepth {
		return 0, &syntaxError{off: i, msg: "nested too deeply"}
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		end, err := scanValue(b, i, depth)
		if err != nil {
			return 0, err
		}
		i = skipSpace(b, end)
		if i >= len(b) {
			return 0, eofError(b)
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return 0, unexpected(b, i, "',' or ']'")
		}
	}
}

func scanObject(b []byte, i, depth int) (int, *syntaxError) {
	if depth > maxDepth {
		return 0, &syntaxError{off: i, msg: "nested too deeply"}
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, unexpected(b, i, "a string key")
		}
		end, _, err := scanString(b, i)
		if err != nil {
			return 0, err
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, unexpected(b, i, "':'")
		}
		i = skipSpace(b, i+1)
		if end, err = scanValue(b, i, depth); err != nil {
			return 0, err
		}
		i = skipSpace(b, end)
		if i >= len(b) {
			return 0, eofError(b)
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return 0, unexpected(b, i, "',' or '}'")
		}
	}
}
