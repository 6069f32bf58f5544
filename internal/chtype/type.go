package chtype

import (
	"strconv"
	"strings"
	"time"
)

// Kind is the family of a ClickHouse type.
type Kind uint8

// The kinds WaveHouse understands. Unsupported is a well-formed type it does not validate.
const (
	Unsupported Kind = iota
	String
	FixedString
	Int8
	Int16
	Int32
	Int64
	Int128
	Int256
	UInt8
	UInt16
	UInt32
	UInt64
	UInt128
	UInt256
	Float32
	Float64
	Bool
	Decimal
	Date
	Date32
	DateTime
	DateTime64
	UUID
	IPv4
	IPv6
	Enum8
	Enum16
	Nullable
	LowCardinality
	Array
	Tuple
	Map
	JSON
)

var kindNames = [...]string{
	Unsupported: "Unsupported", String: "String", FixedString: "FixedString",
	Int8: "Int8", Int16: "Int16", Int32: "Int32", Int64: "Int64", Int128: "Int128", Int256: "Int256",
	UInt8: "UInt8", UInt16: "UInt16", UInt32: "UInt32", UInt64: "UInt64", UInt128: "UInt128", UInt256: "UInt256",
	Float32: "Float32", Float64: "Float64", Bool: "Bool", Decimal: "Decimal",
	Date: "Date", Date32: "Date32", DateTime: "DateTime", DateTime64: "DateTime64",
	UUID: "UUID", IPv4: "IPv4", IPv6: "IPv6", Enum8: "Enum8", Enum16: "Enum16",
	Nullable: "Nullable", LowCardinality: "LowCardinality", Array: "Array", Tuple: "Tuple", Map: "Map", JSON: "JSON",
}

// String returns the family name of k.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// EnumValue is one named value of an Enum8/Enum16 type.
type EnumValue struct {
	Name  string
	Value int16
}

// Field is one element of a Tuple; Name is empty for unnamed tuples.
type Field struct {
	Name string
	Type *Type
}

// Type is a parsed ClickHouse type. It is immutable after Parse and safe for concurrent use.
type Type struct {
	// Kind is the type family.
	Kind Kind
	// Name is the type text as given to Parse, trimmed.
	Name string
	// Len is N of FixedString(N).
	Len int
	// Precision is P of Decimal(P,S) and the sub-second digits of DateTime64.
	Precision int
	// Scale is S of Decimal(P,S).
	Scale int
	// TZ is the explicit time zone of DateTime/DateTime64, empty when the column has none.
	TZ string
	// Enum lists the values of Enum8/Enum16 in declaration order.
	Enum []EnumValue
	// Elem is the inner type of Nullable, LowCardinality and Array.
	Elem *Type
	// Fields are the elements of a Tuple.
	Fields []Field
	// Key and Value are the types of a Map.
	Key, Value *Type

	loc *time.Location
}

// String returns the type text.
func (t *Type) String() string { return t.Name }

// IsNullable reports whether the type accepts NULL (Nullable, or LowCardinality(Nullable)).
func (t *Type) IsNullable() bool {
	switch t.Kind {
	case Nullable:
		return true
	case LowCardinality:
		return t.Elem.IsNullable()
	}
	return false
}

// Base returns the type with Nullable and LowCardinality wrappers removed.
func (t *Type) Base() *Type {
	for t.Kind == Nullable || t.Kind == LowCardinality {
		t = t.Elem
	}
	return t
}

// Location returns the time zone values of a DateTime/DateTime64 column are written in: the
// column's own zone, else UTC.
func (t *Type) Location() *time.Location {
	if t.loc != nil {
		return t.loc
	}
	return time.UTC
}

// Supported reports whether every part of the type can be validated.
func (t *Type) Supported() bool {
	switch t.Kind {
	case Unsupported:
		return false
	case Nullable, LowCardinality, Array:
		return t.Elem.Supported()
	case Map:
		return t.Key.Supported() && t.Value.Supported()
	case Tuple:
		for _, f := range t.Fields {
			if !f.Type.Supported() {
				return false
			}
		}
	}
	return true
}

func (t *Type) enumByName(name string) (EnumValue, bool) {
	for _, e := range t.Enum {
		if e.Name == name {
			return e, true
		}
	}
	return EnumValue{}, false
}

func (t *Type) enumByValue(v int64) (EnumValue, bool) {
	for _, e := range t.Enum {
		if int64(e.Value) == v {
			return e, true
		}
	}
	return EnumValue{}, false
}

func (t *Type) tupleNamed() bool {
	return len(t.Fields) > 0 && t.Fields[0].Name != ""
}

func trimName(s string) string { return strings.TrimSpace(s) }
