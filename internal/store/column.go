package store

import "github.com/wavehouse/wavehouse/internal/chtype"

// DefaultKind is how a column gets a value when an insert does not give one.
type DefaultKind string

// The default kinds of system.columns.default_kind.
const (
	DefaultNone         DefaultKind = ""
	DefaultDefault      DefaultKind = "DEFAULT"
	DefaultMaterialized DefaultKind = "MATERIALIZED"
	DefaultAlias        DefaultKind = "ALIAS"
	DefaultEphemeral    DefaultKind = "EPHEMERAL"
)

// Column describes one column of a table as WaveHouse sees it.
type Column struct {
	// Name is the column name.
	Name string
	// TypeName is the type text from system.columns.
	TypeName string
	// Type is TypeName parsed; unknown families have Kind chtype.Unsupported.
	Type *chtype.Type
	// DefaultKind and DefaultExpr come from system.columns.
	DefaultKind DefaultKind
	DefaultExpr string
}

// Writable reports whether an insert may name the column (MATERIALIZED and ALIAS are computed).
func (c Column) Writable() bool {
	return c.DefaultKind != DefaultMaterialized && c.DefaultKind != DefaultAlias
}

// Nullable reports whether the column accepts NULL.
func (c Column) Nullable() bool { return c.Type != nil && c.Type.IsNullable() }

// Required reports whether every inserted row must give the column a value: it is writable, has
// no DEFAULT (or EPHEMERAL default) and is not Nullable.
func (c Column) Required() bool {
	return c.Writable() && c.DefaultKind == DefaultNone && !c.Nullable()
}

// NewColumn builds a Column from system.columns fields, parsing the type. A type that does not
// parse becomes an Unsupported type rather than an error, so one exotic column never hides a
// table.
func NewColumn(name, typeName, defaultKind, defaultExpr string) Column {
	t, err := chtype.Parse(typeName)
	if err != nil {
		t = &chtype.Type{Kind: chtype.Unsupported, Name: typeName}
	}
	return Column{Name: name, TypeName: typeName, Type: t, DefaultKind: DefaultKind(defaultKind), DefaultExpr: defaultExpr}
}
