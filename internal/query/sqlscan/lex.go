// Package sqlscan holds pure functions over ClickHouse SQL text used by the query path:
// a read-only statement check ([Check]), a conservative table-reference scanner
// ([Tables]) and normalisation for cache keys ([Normalize]). It uses only the standard
// library and never executes or fully parses SQL: when the text is ambiguous it refuses
// (Check) or reports that it is not sure (Tables).
package sqlscan

import (
	"errors"
	"strings"
)

// tokenKind classifies a lexical token.
type tokenKind int

const (
	tokWord   tokenKind = iota // bare identifier or keyword
	tokQuoted                  // "identifier" or `identifier`
	tokString                  // 'string literal'
	tokNumber                  // numeric literal
	tokPunct                   // any other single character
)

// token is one lexical token; text is the raw text, value the unescaped name of a quoted
// identifier.
type token struct {
	kind  tokenKind
	text  string
	value string
	depth int // parenthesis depth before the token
	// start and end are the token's byte offsets in the statement text.
	start, end int
}

// Lexical errors.
var (
	errUnterminatedString  = errors.New("unterminated string literal")
	errUnterminatedQuoted  = errors.New("unterminated quoted identifier")
	errUnterminatedComment = errors.New("unterminated comment")
	errNestedComment       = errors.New("nested block comments are not accepted")
	errHeredoc             = errors.New("'$' (heredoc strings, positional parameters) is not accepted")
	errUnbalanced          = errors.New("unbalanced parentheses")
)

// span is a region of the input: a token, or a run of whitespace and comments (gap).
type span struct {
	gap   bool
	start int
	end   int
}

// scan splits sql into spans of tokens and gaps (whitespace and comments). It recognises
// "--" and "#" line comments, "/* */" block comments (refusing nesting, which servers
// disagree on), single-quoted strings, double-quoted and backquoted identifiers (with
// backslash escapes and doubled quotes), and refuses '$'.
func scan(sql string) ([]span, error) {
	var spans []span
	i := 0
	for i < len(sql) {
		start := i
		c := sql[i]
		switch {
		case isSpace(c) || c == '#' || strings.HasPrefix(sql[i:], "--") || strings.HasPrefix(sql[i:], "/*"):
		gap:
			for i < len(sql) {
				switch {
				case isSpace(sql[i]):
					i++
					continue
				case sql[i] == '#' || strings.HasPrefix(sql[i:], "--"):
					for i < len(sql) && sql[i] != '\n' {
						i++
					}
					continue
				case strings.HasPrefix(sql[i:], "/*"):
					end := strings.Index(sql[i+2:], "*/")
					if end < 0 {
						return nil, errUnterminatedComment
					}
					if strings.Contains(sql[i+2:i+2+end], "/*") {
						return nil, errNestedComment
					}
					i += 2 + end + 2
					continue
				}
				break gap
			}
			spans = append(spans, span{gap: true, start: start, end: i})
			continue
		case c == '\'' || c == '"' || c == '`':
			end, ok := quotedEnd(sql, i)
			if !ok {
				if c == '\'' {
					return nil, errUnterminatedString
				}
				return nil, errUnterminatedQuoted
			}
			i = end
		case c == '$':
			return nil, errHeredoc
		case isWordStart(c):
			for i < len(sql) && isWordChar(sql[i]) {
				i++
			}
		case isDigit(c) || (c == '.' && i+1 < len(sql) && isDigit(sql[i+1])):
			for i < len(sql) && (isWordChar(sql[i]) || sql[i] == '.' ||
				((sql[i] == '+' || sql[i] == '-') && (sql[i-1] == 'e' || sql[i-1] == 'E'))) {
				i++
			}
		default:
			i++
		}
		spans = append(spans, span{start: start, end: i})
	}
	return spans, nil
}

// quotedEnd returns the index just after the quoted region starting at sql[i].
func quotedEnd(sql string, i int) (int, bool) {
	q := sql[i]
	for j := i + 1; j < len(sql); j++ {
		switch sql[j] {
		case '\\':
			j++
		case q:
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j + 1, true
		}
	}
	return 0, false
}

// unquote returns the name inside a quoted identifier.
func unquote(text string) string {
	q := text[0]
	body := text[1 : len(text)-1]
	var b strings.Builder
	for j := 0; j < len(body); j++ {
		c := body[j]
		switch {
		case c == '\\' && j+1 < len(body):
			j++
			b.WriteByte(unescapeByte(body[j]))
		case c == q && j+1 < len(body) && body[j+1] == q:
			j++
			b.WriteByte(q)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func unescapeByte(c byte) byte {
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

// tokenize returns the tokens of sql (comments and whitespace dropped) with their
// parenthesis depth, refusing unbalanced parentheses.
func tokenize(sql string) ([]token, error) {
	spans, err := scan(sql)
	if err != nil {
		return nil, err
	}
	toks := make([]token, 0, len(spans))
	depth := 0
	for _, s := range spans {
		if s.gap {
			continue
		}
		text := sql[s.start:s.end]
		t := token{text: text, depth: depth, start: s.start, end: s.end}
		switch c := text[0]; {
		case c == '\'':
			t.kind = tokString
		case c == '"' || c == '`':
			t.kind, t.value = tokQuoted, unquote(text)
		case isWordStart(c):
			t.kind, t.value = tokWord, text
		case isDigit(c) || c == '.' && len(text) > 1:
			t.kind = tokNumber
		default:
			t.kind = tokPunct
			switch c {
			case '(', '[':
				depth++
			case ')', ']':
				depth--
				if depth < 0 {
					return nil, errUnbalanced
				}
				t.depth = depth
			}
		}
		toks = append(toks, t)
	}
	if depth != 0 {
		return nil, errUnbalanced
	}
	return toks, nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isWordStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
func isWordChar(c byte) bool { return isWordStart(c) || isDigit(c) }

// is reports whether t is the bare word kw (case-insensitive).
func (t token) is(kw string) bool { return t.kind == tokWord && strings.EqualFold(t.text, kw) }

// isPunct reports whether t is the punctuation p.
func (t token) isPunct(p string) bool { return t.kind == tokPunct && t.text == p }
