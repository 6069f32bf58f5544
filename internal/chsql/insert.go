// Package chsql reads the statements of ClickHouse's HTTP interface that the gateway itself
// handles: it tells an INSERT from everything else and parses the head of an INSERT
// (INSERT INTO [db.]table [(c1, …)] [SETTINGS k = v, …] FORMAT name), the part before the data.
//
// # Semantics
//
// Keywords are case-insensitive; identifiers are bare ([A-Za-z_][A-Za-z0-9_]*), backquoted or
// double-quoted (with \ escapes and a doubled quote, as ClickHouse reads them). Whitespace and
// comments (-- to the end of the line, /* … */) may appear between tokens and before the
// statement. The data of an INSERT starts after the format name, its spaces and tabs and at most
// one line break, as ClickHouse's ParserInsertQuery has it.
//
// # Errors
//
// ParseInsert returns a *SyntaxError (errors.Is ErrSyntax) naming the byte offset and what was
// expected, ErrIncomplete when the text ends before the statement's FORMAT name (the rest may
// follow in the HTTP body), and a *UnsupportedError (errors.Is ErrUnsupported) for INSERT forms
// the gateway does not take (VALUES, SELECT, INSERT INTO FUNCTION).
package chsql

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrSyntax is the sentinel of every *SyntaxError.
	ErrSyntax = errors.New("chsql: syntax error")
	// ErrIncomplete means the statement ends before its FORMAT clause.
	ErrIncomplete = errors.New("chsql: incomplete statement")
	// ErrUnsupported is the sentinel of every *UnsupportedError.
	ErrUnsupported = errors.New("chsql: unsupported statement")
)

// SyntaxError is a statement the parser cannot read.
type SyntaxError struct {
	// Pos is the byte offset of the problem in the statement text.
	Pos int
	// Msg says what was found and what was expected.
	Msg string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s at position %d", e.Msg, e.Pos) }

// Is makes errors.Is(err, ErrSyntax) true.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

// UnsupportedError is a well-formed INSERT the gateway does not serve.
type UnsupportedError struct {
	// What names the unsupported form ("VALUES", "INSERT … SELECT", "INSERT INTO FUNCTION").
	What string
}

func (e *UnsupportedError) Error() string { return e.What + " is not supported" }

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// Setting is one name = value of a SETTINGS clause; Value is the literal's text (a string
// literal unquoted and unescaped).
type Setting struct {
	Name, Value string
}

// Insert is the head of an INSERT statement.
type Insert struct {
	// Database is empty when the table is not qualified.
	Database string
	Table    string
	// Columns is the column list, nil when the statement has none.
	Columns []string
	// Settings are the SETTINGS clause's, in statement order.
	Settings []Setting
	// Format is the format name as written.
	Format string
	// Data is the offset in the statement text where the data starts.
	Data int
}

// IsInsert reports whether the statement's first keyword is INSERT.
func IsInsert(src string) bool {
	s := scanner{src: src}
	s.skip()
	w, ok := s.word()
	return ok && strings.EqualFold(w, "INSERT")
}

// ParseInsert parses the head of the INSERT statement src.
func ParseInsert(src string) (Insert, error) {
	s := scanner{src: src}
	var ins Insert
	if err := s.keyword("INSERT"); err != nil {
		return ins, err
	}
	if err := s.keyword("INTO"); err != nil {
		return ins, err
	}
	if s.peekKeyword("FUNCTION") {
		return ins, &UnsupportedError{What: "INSERT INTO FUNCTION"}
	}
	if s.peekKeyword("TABLE") {
		_, _ = s.word()
	}
	name, err := s.ident("a table name")
	if err != nil {
		return ins, err
	}
	s.skip()
	if s.i < len(src) && src[s.i] == '.' {
		s.i++
		ins.Database = name
		if name, err = s.ident("a table name after the database"); err != nil {
			return ins, err
		}
	}
	ins.Table = name
	s.skip()
	if s.i < len(src) && src[s.i] == '(' {
		s.i++
		if ins.Columns, err = s.columns(); err != nil {
			return ins, err
		}
	}
	if s.peekKeyword("SETTINGS") {
		_, _ = s.word()
		if ins.Settings, err = s.settings(); err != nil {
			return ins, err
		}
	}
	s.skip()
	if s.i >= len(src) {
		return ins, ErrIncomplete
	}
	w, ok := s.word()
	switch {
	case ok && strings.EqualFold(w, "FORMAT"):
	case ok && strings.EqualFold(w, "VALUES"):
		return ins, &UnsupportedError{What: "VALUES"}
	case ok && (strings.EqualFold(w, "SELECT") || strings.EqualFold(w, "WITH")):
		return ins, &UnsupportedError{What: "INSERT … SELECT"}
	default:
		return ins, s.expected("FORMAT, VALUES or SELECT")
	}
	s.skip()
	if s.i >= len(src) {
		return ins, ErrIncomplete
	}
	if ins.Format, ok = s.word(); !ok {
		return ins, s.expected("a format name")
	}
	ins.Data = dataStart(src, s.i)
	return ins, nil
}

// dataStart is where the data after the format name at i starts: past spaces, tabs and form
// feeds and at most one line break (CR LF, LF or CR).
func dataStart(src string, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\f') {
		i++
	}
	if i < len(src) && src[i] == '\r' {
		i++
	}
	if i < len(src) && src[i] == '\n' {
		i++
	}
	return i
}

// columns reads an identifier list after its '(' up to and including its ')'.
func (s *scanner) columns() ([]string, error) {
	cols := []string{}
	for {
		c, err := s.ident("a column name")
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
		s.skip()
		if s.i >= len(s.src) {
			return nil, ErrIncomplete
		}
		switch s.src[s.i] {
		case ',':
			s.i++
		case ')':
			s.i++
			return cols, nil
		default:
			return nil, s.expected("',' or ')' in the column list")
		}
	}
}

// settings reads name = value pairs separated by commas.
func (s *scanner) settings() ([]Setting, error) {
	var out []Setting
	for {
		name, err := s.ident("a setting name")
		if err != nil {
			return nil, err
		}
		s.skip()
		if s.i >= len(s.src) {
			return nil, ErrIncomplete
		}
		if s.src[s.i] != '=' {
			return nil, s.expected("'=' after setting " + name)
		}
		s.i++
		v, err := s.literal()
		if err != nil {
			return nil, err
		}
		out = append(out, Setting{Name: name, Value: v})
		s.skip()
		if s.i < len(s.src) && s.src[s.i] == ',' {
			s.i++
			continue
		}
		return out, nil
	}
}

// literal reads a setting's value: a quoted string, a number or a bare word (true, false).
func (s *scanner) literal() (string, error) {
	s.skip()
	if s.i >= len(s.src) {
		return "", ErrIncomplete
	}
	if s.src[s.i] == '\'' {
		return s.quoted('\'')
	}
	start := s.i
	if s.src[s.i] == '-' || s.src[s.i] == '+' {
		s.i++
	}
	for s.i < len(s.src) && (isWordByte(s.src[s.i]) || s.src[s.i] == '.') {
		s.i++
	}
	if s.i == start || s.i == start+1 && (s.src[start] == '-' || s.src[start] == '+') {
		s.i = start
		return "", s.expected("a setting value")
	}
	return s.src[start:s.i], nil
}
