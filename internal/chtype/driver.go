package chtype

import (
	"reflect"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// ToDriver converts a canonical value of t into the Go value clickhouse-go's batch Append wants
// for a column of type t: string, the sized Go integer, *big.Int for 128/256-bit integers,
// float32/float64, bool, decimal.Decimal, time.Time, uuid.UUID, netip.Addr, nil for NULL,
// []any for arrays and tuples, and a typed map for maps. Any valid JSON is accepted as input
// and checked as Canonical would; an invalid value is an *Error, never a panic.
func (t *Type) ToDriver(canonical []byte) (any, error) {
	raw := trimWS(canonical)
	if len(raw) == 0 {
		return nil, errorf(CodeInvalidValue, "empty value")
	}
	if raw[0] == 'n' {
		if string(raw) == "null" && t.IsNullable() {
			return nil, nil
		}
		if string(raw) == "null" {
			return nil, errorf(CodeNullNotAllowed, "null is not allowed for %s", t.Name)
		}
		return nil, errorf(CodeInvalidValue, "malformed JSON %q", excerpt(raw))
	}
	switch t.Kind {
	case Nullable, LowCardinality:
		return t.Elem.ToDriver(raw)
	case String, FixedString:
		s, ok := stringArg(raw)
		if !ok {
			return nil, mismatch(t, raw)
		}
		if t.Kind == FixedString && len(s) > t.Len {
			return nil, errorf(CodeTooLong, "%d bytes do not fit %s", len(s), t.Name)
		}
		return s, nil
	case Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64:
		return t.driverInt(raw)
	case Int128, Int256, UInt128, UInt256:
		return t.parseBigInt(raw)
	case Float32, Float64:
		f, err := t.parseFloat(raw)
		if err != nil {
			return nil, err
		}
		if t.Kind == Float32 {
			return float32(f), nil
		}
		return f, nil
	case Bool:
		switch string(raw) {
		case "true", "1", `"true"`:
			return true, nil
		case "false", "0", `"false"`:
			return false, nil
		}
		return nil, mismatch(t, raw)
	case Decimal:
		return t.parseDecimal(raw)
	case Date, Date32, DateTime, DateTime64:
		return t.parseTime(raw)
	case UUID:
		s, ok := stringArg(raw)
		if !ok {
			return nil, mismatch(t, raw)
		}
		u, err := uuid.Parse(s)
		if err != nil || len(s) != 36 && len(s) != 32 {
			return nil, errorf(CodeInvalidValue, "invalid UUID %q", excerpt([]byte(s)))
		}
		return u, nil
	case IPv4, IPv6:
		return t.parseIP(raw)
	case Enum8, Enum16:
		e, err := t.enumArg(raw)
		if err != nil {
			return nil, err
		}
		return e.Name, nil
	case Array:
		return t.driverArray(raw)
	case Tuple:
		// Re-canonicalise first so named-object input and element order are handled once.
		c, err := t.Canonical(raw)
		if err != nil {
			return nil, err
		}
		out := make([]any, 0, len(t.Fields))
		_, err = SplitArray(c, func(i int, elem []byte) error {
			v, err := t.Fields[i].Type.ToDriver(elem)
			out = append(out, v)
			return tupleStep(err, t, i)
		})
		return out, err
	case Map:
		return t.driverMap(raw)
	case JSON:
		c, err := t.Canonical(raw)
		if err != nil {
			return nil, err
		}
		return string(c), nil
	}
	return nil, errorf(CodeUnsupportedType, "type %s is not supported", t.Name)
}

func (t *Type) driverInt(raw []byte) (any, error) {
	var buf [24]byte
	c, err := t.appendInt(buf[:0], raw)
	if err != nil {
		return nil, err
	}
	s := string(c)
	if isUnsigned(t.Kind) {
		v, _ := strconv.ParseUint(s, 10, 64)
		switch t.Kind {
		case UInt8:
			return uint8(v), nil
		case UInt16:
			return uint16(v), nil
		case UInt32:
			return uint32(v), nil
		}
		return v, nil
	}
	v, _ := strconv.ParseInt(s, 10, 64)
	switch t.Kind {
	case Int8:
		return int8(v), nil
	case Int16:
		return int16(v), nil
	case Int32:
		return int32(v), nil
	}
	return v, nil
}

func (t *Type) driverArray(raw []byte) (any, error) {
	if raw[0] != '[' {
		return nil, mismatch(t, raw)
	}
	out := []any{}
	ok, err := SplitArray(raw, func(i int, elem []byte) error {
		v, err := t.Elem.ToDriver(elem)
		if err != nil {
			return within(err, "["+strconv.Itoa(i)+"]")
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errorf(CodeInvalidValue, "malformed JSON array")
	}
	return out, nil
}

// driverMap builds a map typed like clickhouse-go's scan type for the column, which is what its
// Map column requires; only scalar key and value types have such a plain Go type here.
func (t *Type) driverMap(raw []byte) (any, error) {
	c, err := t.Canonical(raw)
	if err != nil {
		return nil, err
	}
	kt, vt := t.Key.goType(), t.Value.goType()
	if kt == nil || vt == nil || !kt.Comparable() {
		return nil, errorf(CodeUnsupportedType, "%s has no plain Go map type for the native driver", t.Name)
	}
	m := reflect.MakeMap(reflect.MapOf(kt, vt))
	_, err = splitObject(c, func(key, val []byte) error {
		ks, _ := unquote(key)
		k, err := t.Key.ToDriver(key)
		if err != nil {
			return within(err, ".key")
		}
		v, err := t.Value.ToDriver(val)
		if err != nil {
			return within(err, "."+excerpt([]byte(ks)))
		}
		vv := reflect.Zero(vt)
		if v != nil {
			if t.Value.IsNullable() {
				p := reflect.New(vt.Elem())
				p.Elem().Set(reflect.ValueOf(v))
				vv = p
			} else {
				vv = reflect.ValueOf(v)
			}
		}
		m.SetMapIndex(reflect.ValueOf(k), vv)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m.Interface(), nil
}

// goType is the Go type ToDriver yields for scalar t (pointer for Nullable), or nil.
func (t *Type) goType() reflect.Type {
	switch t.Kind {
	case LowCardinality:
		return t.Elem.goType()
	case Nullable:
		if e := t.Elem.goType(); e != nil {
			return reflect.PointerTo(e)
		}
		return nil
	case String, FixedString, Enum8, Enum16:
		return reflect.TypeFor[string]()
	case Int8:
		return reflect.TypeFor[int8]()
	case Int16:
		return reflect.TypeFor[int16]()
	case Int32:
		return reflect.TypeFor[int32]()
	case Int64:
		return reflect.TypeFor[int64]()
	case UInt8:
		return reflect.TypeFor[uint8]()
	case UInt16:
		return reflect.TypeFor[uint16]()
	case UInt32:
		return reflect.TypeFor[uint32]()
	case UInt64:
		return reflect.TypeFor[uint64]()
	case Float32:
		return reflect.TypeFor[float32]()
	case Float64:
		return reflect.TypeFor[float64]()
	case Bool:
		return reflect.TypeFor[bool]()
	case Decimal:
		return reflect.TypeFor[decimal.Decimal]()
	case Date, Date32, DateTime, DateTime64:
		return reflect.TypeFor[time.Time]()
	case UUID:
		return reflect.TypeFor[uuid.UUID]()
	}
	return nil
}
