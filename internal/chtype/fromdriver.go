package chtype

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"reflect"
	"sort"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// AppendDriver appends the canonical JSON of v, a value clickhouse-go scanned from a column of
// type t, to dst. It is the inverse of ToDriver, used to render native query results.
func (t *Type) AppendDriver(dst []byte, v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	for rv.IsValid() && (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface) {
		if rv.IsNil() {
			return append(dst, "null"...), nil
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return append(dst, "null"...), nil
	}
	v = rv.Interface()
	switch t.Kind {
	case Nullable, LowCardinality:
		return t.Elem.AppendDriver(dst, v)
	case String, FixedString, Enum8, Enum16:
		switch x := v.(type) {
		case string:
			return appendString(dst, x), nil
		case []byte:
			return appendString(dst, string(x)), nil
		}
	case Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64:
		switch rv.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return strconv.AppendInt(dst, rv.Int(), 10), nil
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return strconv.AppendUint(dst, rv.Uint(), 10), nil
		}
	case Int128, Int256, UInt128, UInt256:
		if x, ok := v.(big.Int); ok {
			return x.Append(dst, 10), nil
		}
	case Float32, Float64:
		if rv.Kind() == reflect.Float32 || rv.Kind() == reflect.Float64 {
			return appendFloat(dst, rv.Float(), t.Kind), nil
		}
	case Bool:
		if rv.Kind() == reflect.Bool {
			return strconv.AppendBool(dst, rv.Bool()), nil
		}
	case Decimal:
		if x, ok := v.(decimal.Decimal); ok {
			return append(dst, x.StringFixed(int32(t.Scale))...), nil
		}
	case Date, Date32, DateTime, DateTime64:
		if x, ok := v.(time.Time); ok {
			if t.Kind == Date || t.Kind == Date32 {
				x = time.Date(x.Year(), x.Month(), x.Day(), 0, 0, 0, 0, time.UTC)
			}
			return t.appendTime(dst, x), nil
		}
	case UUID:
		if x, ok := v.(uuid.UUID); ok {
			return appendString(dst, x.String()), nil
		}
	case IPv4, IPv6:
		switch x := v.(type) {
		case netip.Addr:
			return appendString(dst, x.String()), nil
		case net.IP:
			a, ok := netip.AddrFromSlice(x)
			if ok {
				if t.Kind == IPv4 {
					a = a.Unmap()
				}
				return appendString(dst, a.String()), nil
			}
		}
	case Array:
		if rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
			dst = append(dst, '[')
			for i := 0; i < rv.Len(); i++ {
				if i > 0 {
					dst = append(dst, ',')
				}
				var err error
				if dst, err = t.Elem.AppendDriver(dst, rv.Index(i).Interface()); err != nil {
					return dst, err
				}
			}
			return append(dst, ']'), nil
		}
	case Tuple:
		return t.appendDriverTuple(dst, rv)
	case Map:
		if rv.Kind() == reflect.Map {
			return t.appendDriverMap(dst, rv)
		}
	case JSON:
		b, err := json.Marshal(v)
		if err != nil {
			return dst, errorf(CodeInvalidValue, "cannot encode %T as JSON", v)
		}
		if s, ok := v.(string); ok && json.Valid([]byte(s)) {
			b = []byte(s)
		}
		var buf bytes.Buffer
		if json.Compact(&buf, b) == nil {
			return append(dst, buf.Bytes()...), nil
		}
		return append(dst, b...), nil
	default:
		return dst, errorf(CodeUnsupportedType, "type %s is not supported", t.Name)
	}
	return dst, errorf(CodeTypeMismatch, "driver value %s for %s", fmt.Sprintf("%T", v), t.Name)
}

func (t *Type) appendDriverTuple(dst []byte, rv reflect.Value) ([]byte, error) {
	dst = append(dst, '[')
	for i, f := range t.Fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		var ev reflect.Value
		switch rv.Kind() {
		case reflect.Slice, reflect.Array:
			if i < rv.Len() {
				ev = rv.Index(i)
			}
		case reflect.Map:
			if rv.Type().Key().Kind() == reflect.String {
				ev = rv.MapIndex(reflect.ValueOf(f.Name).Convert(rv.Type().Key()))
			}
		}
		if !ev.IsValid() {
			return dst, errorf(CodeTypeMismatch, "driver value %s for %s", rv.Type(), t.Name)
		}
		var err error
		if dst, err = f.Type.AppendDriver(dst, ev.Interface()); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

func (t *Type) appendDriverMap(dst []byte, rv reflect.Value) ([]byte, error) {
	type kv struct {
		k string
		v reflect.Value
	}
	entries := make([]kv, 0, rv.Len())
	var kbuf []byte
	iter := rv.MapRange()
	for iter.Next() {
		var err error
		kbuf, err = t.Key.AppendDriver(kbuf[:0], iter.Key().Interface())
		if err != nil {
			return dst, err
		}
		k := string(kbuf)
		if s, ok := unquote(kbuf); ok {
			k = s
		}
		entries = append(entries, kv{k, iter.Value()})
	}
	// Go maps have no order; sort so equal maps render equal bytes.
	sort.Slice(entries, func(i, j int) bool { return entries[i].k < entries[j].k })
	dst = append(dst, '{')
	for i, e := range entries {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, e.k)
		dst = append(dst, ':')
		var err error
		if dst, err = t.Value.AppendDriver(dst, e.v.Interface()); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}
