// Package sharding evaluates the sharding key of a ClickHouse Distributed table the way the
// server does, so the gateway can send each row straight to the local table of the shard the
// Distributed table would have chosen. It supports the keys it can evaluate exactly: a plain
// integer column, intHash64 of an integer column and cityHash64 of integer and String columns;
// Parse refuses every other expression.
package sharding

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnsupported is matched by the error of Parse for a key the gateway cannot evaluate.
var ErrUnsupported = errors.New("sharding: unsupported sharding key")

// Value is one column value of a row: for an integer column, its value as a 64-bit two's
// complement (a negative Int8 is sign-extended); for a String column, its bytes.
type Value struct {
	Int   uint64
	Bytes []byte
}

// argType is how a key column is held by ClickHouse: an integer of bits width, or a string.
type argType struct {
	str    bool
	bits   int
	signed bool
}

// truncated returns v's bits as the unsigned integer of the column's width, as ClickHouse
// reinterprets a signed column to take it modulo the shards' total weight.
func (a argType) truncated(v uint64) uint64 {
	if a.bits == 64 {
		return v
	}
	return v & (1<<a.bits - 1)
}

// function is the outer function of a key.
type function int

const (
	fnColumn function = iota
	fnIntHash64
	fnCityHash64
)

// Key is a parsed sharding key.
type Key struct {
	expr  string
	fn    function
	cols  []string
	types []argType
}

// Parse parses the sharding key expression expr of a Distributed table, as ClickHouse prints it
// in create_table_query. typeOf returns the type of a column of the table. A key the gateway
// cannot evaluate exactly is an error matching ErrUnsupported that names the expression.
func Parse(expr string, typeOf func(column string) (string, bool)) (*Key, error) {
	k := &Key{expr: strings.TrimSpace(expr)}
	name, args, call, err := splitCall(k.expr)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrUnsupported, k.expr, err)
	}
	switch {
	case !call:
		k.fn, k.cols = fnColumn, []string{name}
	case name == "intHash64" && len(args) == 1:
		k.fn, k.cols = fnIntHash64, args
	case name == "cityHash64" && len(args) >= 1:
		k.fn, k.cols = fnCityHash64, args
	default:
		return nil, fmt.Errorf("%w %q: only a plain integer column, intHash64(column) and cityHash64(column, …) are evaluated by the gateway", ErrUnsupported, k.expr)
	}
	for _, c := range k.cols {
		if _, _, call, err := splitCall(c); err != nil || call {
			return nil, fmt.Errorf("%w %q: argument %q is not a column", ErrUnsupported, k.expr, c)
		}
		t, ok := typeOf(c)
		if !ok {
			return nil, fmt.Errorf("%w %q: column %q is not in the table", ErrUnsupported, k.expr, c)
		}
		at, ok := parseArgType(t)
		if !ok || at.str && k.fn != fnCityHash64 {
			return nil, fmt.Errorf("%w %q: column %s has type %s, not an integer (U)Int8…64%s", ErrUnsupported, k.expr, c, t,
				map[bool]string{true: " or String", false: ""}[k.fn == fnCityHash64])
		}
		k.types = append(k.types, at)
	}
	return k, nil
}

// String returns the expression.
func (k *Key) String() string { return k.expr }

// Columns returns the columns the key reads, in the order Eval takes their values.
func (k *Key) Columns() []string { return k.cols }

// Eval returns the key's value for one row, given the values of Columns, as the unsigned
// integer ClickHouse takes modulo the total weight of the shards.
func (k *Key) Eval(vals []Value) uint64 {
	switch k.fn {
	case fnColumn:
		return k.types[0].truncated(vals[0].Int)
	case fnIntHash64:
		// intHash64 takes its argument converted to UInt64: a signed value is sign-extended.
		return intHash64(vals[0].Int)
	}
	var h uint64
	for i, v := range vals {
		var x uint64
		if k.types[i].str {
			x = cityHash64(v.Bytes)
		} else {
			// cityHash64 of an integer hashes its bytes zero-extended to 8 with intHash64.
			x = intHash64(k.types[i].truncated(v.Int))
		}
		if i == 0 {
			h = x
		} else {
			h = hash128to64(h, x)
		}
	}
	return h
}

// IsString reports whether the i-th column of the key is a String.
func (k *Key) IsString(i int) bool { return k.types[i].str }

func parseArgType(t string) (argType, bool) {
	switch t {
	case "String":
		return argType{str: true}, true
	case "UInt8", "UInt16", "UInt32", "UInt64", "Int8", "Int16", "Int32", "Int64":
	default:
		return argType{}, false
	}
	signed := t[0] == 'I'
	var bits int
	_, _ = fmt.Sscanf(strings.TrimLeft(t, "UInt"), "%d", &bits)
	return argType{bits: bits, signed: signed}, true
}

// splitCall splits "f(a, b)" into f and [a b] (call true), or returns a bare identifier
// (call false). Back-quoted identifiers are unquoted.
func splitCall(s string) (name string, args []string, call bool, err error) {
	s = strings.TrimSpace(s)
	open := strings.IndexByte(s, '(')
	if open < 0 {
		id, ok := ident(s)
		if !ok {
			return "", nil, false, fmt.Errorf("%q is not a column name", s)
		}
		return id, nil, false, nil
	}
	if !strings.HasSuffix(s, ")") {
		return "", nil, false, fmt.Errorf("%q is not a function call", s)
	}
	name = strings.TrimSpace(s[:open])
	if _, ok := ident(name); !ok {
		return "", nil, false, fmt.Errorf("%q is not a function name", name)
	}
	inner := strings.TrimSpace(s[open+1 : len(s)-1])
	if inner == "" {
		return name, nil, true, nil
	}
	for _, a := range SplitArgs(inner) {
		args = append(args, strings.TrimSpace(a))
	}
	for i, a := range args {
		if id, ok := ident(a); ok {
			args[i] = id
		}
	}
	return name, args, true, nil
}

// ident returns s as an identifier: [A-Za-z_][A-Za-z0-9_]* or back-quoted.
func ident(s string) (string, bool) {
	if len(s) >= 2 && s[0] == '`' && s[len(s)-1] == '`' {
		return strings.ReplaceAll(s[1:len(s)-1], "\\`", "`"), true
	}
	if s == "" {
		return "", false
	}
	for i, c := range s {
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return "", false
	}
	return s, true
}

// SplitArgs splits a comma-separated argument list at the top level, keeping parentheses,
// quoted strings and back-quoted names whole.
func SplitArgs(s string) []string {
	var out []string
	start := 0
	walk(s, 0, func(i int, c byte, depth int) bool {
		if c == ',' && depth == 0 {
			out = append(out, s[start:i])
			start = i + 1
		}
		return true
	})
	return append(out, s[start:])
}

// walk calls fn for every byte of s outside quoted strings and back-quoted names, with the
// parenthesis depth after that byte (starting from depth), until fn returns false.
func walk(s string, depth int, fn func(i int, c byte, depth int) bool) {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
			continue
		case c == '\'' || c == '`' || c == '"':
			quote = c
			continue
		case c == '(':
			depth++
		case c == ')':
			depth--
		}
		if !fn(i, c, depth) {
			return
		}
	}
}
