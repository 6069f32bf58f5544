package chformat

import (
	"bytes"
	"errors"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

var errMalformedObject = errors.New("not a JSON object")

// EachMember calls fn with the name (raw JSON, quoted) and value of each member of the JSON
// object v, in order, as canonical Map values are written.
func EachMember(v []byte, fn func(k, e []byte) error) error {
	v = bytes.TrimSpace(v)
	if len(v) < 2 || v[0] != '{' || v[len(v)-1] != '}' {
		return errMalformedObject
	}
	i := 1
	ws := func() {
		for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
			i++
		}
	}
	ws()
	if v[i] == '}' {
		return nil
	}
	for {
		ws()
		end := chtype.SkipValue(v, i)
		if end <= i || v[i] != '"' {
			return errMalformedObject
		}
		key := v[i:end]
		i = end
		ws()
		if i >= len(v) || v[i] != ':' {
			return errMalformedObject
		}
		i++
		ws()
		end = chtype.SkipValue(v, i)
		if end <= i {
			return errMalformedObject
		}
		if err := fn(key, v[i:end]); err != nil {
			return err
		}
		i = end
		ws()
		switch {
		case i < len(v)-1 && v[i] == ',':
			i++
		case i == len(v)-1:
			return nil
		default:
			return errMalformedObject
		}
	}
}

// MapKey returns the canonical value of a Map key of type t given as a JSON object member
// name k (canonical Map keys are JSON strings): k itself for string-like key types, its content
// for numeric and boolean ones.
func MapKey(t *chtype.Type, k []byte) []byte {
	for t.Kind == chtype.LowCardinality || t.Kind == chtype.Nullable {
		t = t.Elem
	}
	switch t.Kind {
	case chtype.String, chtype.FixedString, chtype.Enum8, chtype.Enum16, chtype.Date, chtype.Date32,
		chtype.DateTime, chtype.DateTime64, chtype.UUID, chtype.IPv4, chtype.IPv6:
		return k
	}
	if len(k) >= 2 && k[0] == '"' {
		return k[1 : len(k)-1]
	}
	return k
}
