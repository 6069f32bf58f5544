package schemacache

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wavehouse/wavehouse/internal/store"
)

// encodedVersion is the format version of an encoded schema.
const encodedVersion = 1

type encodedSchema struct {
	V       int             `json:"v"`
	Columns []encodedColumn `json:"columns"`
}

// encodedColumn holds the system.columns fields a Column is rebuilt from.
type encodedColumn struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	DefaultKind string `json:"default_kind,omitempty"`
	DefaultExpr string `json:"default_expr,omitempty"`
}

// Encode returns the Backing form of cols: versioned JSON of the system.columns fields, so that a
// schema kept by one release is read by the next.
func Encode(cols []store.Column) ([]byte, error) {
	s := encodedSchema{V: encodedVersion, Columns: make([]encodedColumn, len(cols))}
	for i, c := range cols {
		s.Columns[i] = encodedColumn{Name: c.Name, Type: c.TypeName, DefaultKind: string(c.DefaultKind), DefaultExpr: c.DefaultExpr}
	}
	return json.Marshal(s)
}

// Decode rebuilds the columns Encode encoded, parsing each type again.
func Decode(b []byte) ([]store.Column, error) {
	var s encodedSchema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("schemacache: decode: %w", err)
	}
	if s.V != encodedVersion {
		return nil, fmt.Errorf("schemacache: decode: unknown format version %d", s.V)
	}
	if len(s.Columns) == 0 {
		return nil, errors.New("schemacache: decode: no columns")
	}
	cols := make([]store.Column, len(s.Columns))
	for i, c := range s.Columns {
		cols[i] = store.NewColumn(c.Name, c.Type, c.DefaultKind, c.DefaultExpr)
	}
	return cols, nil
}
