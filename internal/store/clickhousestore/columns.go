package clickhousestore

import (
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// builder accumulates one column of a batch from canonical values and hands it to the driver.
// Common scalar types (and Nullable/Array of them) are built as typed slices appended in one
// call, which skips the driver's per-value reflection; other types go value by value through
// chtype's ToDriver.
type builder interface {
	add(elem []byte) error
	flush(col driver.BatchColumn) error
	// values returns the accumulated slice.
	values() any
}

// newBuilder returns the builder for a column type.
func newBuilder(t *chtype.Type, n int) builder {
	base := t
	for base.Kind == chtype.LowCardinality {
		base = base.Elem
	}
	if p := scalarParser(base); p != nil {
		return p(n)
	}
	return &rowBuilder{t: t, vals: make([]any, 0, n)}
}

type sliceBuilder[T any] struct {
	vals  []T
	parse func([]byte) (T, error)
}

func (b *sliceBuilder[T]) add(e []byte) error {
	v, err := b.parse(e)
	if err != nil {
		return err
	}
	b.vals = append(b.vals, v)
	return nil
}

func (b *sliceBuilder[T]) flush(col driver.BatchColumn) error { return col.Append(b.vals) }

func (b *sliceBuilder[T]) values() any { return b.vals }

// typed returns the constructor of a typed builder using parse.
func typed[T any](_ *chtype.Type, parse func([]byte) (T, error)) func(n int) builder {
	return func(n int) builder { return &sliceBuilder[T]{vals: make([]T, 0, n), parse: parse} }
}

// scalarParser returns a builder constructor for base when it has a fast path.
func scalarParser(base *chtype.Type) func(n int) builder {
	switch base.Kind {
	case chtype.Nullable:
		return nullableParser(base.Elem)
	case chtype.Array:
		return arrayParser(base.Elem)
	}
	return plain(base)
}

// plain picks the typed builder of a non-nullable scalar; each parse falls back to ToDriver for
// any input its fast path does not recognise, so results never differ from ToDriver's.
func plain(t *chtype.Type) func(n int) builder {
	switch t.Kind {
	case chtype.String:
		return typed(t, stringParser(t))
	case chtype.UInt8:
		return typed(t, uintParser[uint8](t, 8))
	case chtype.UInt16:
		return typed(t, uintParser[uint16](t, 16))
	case chtype.UInt32:
		return typed(t, uintParser[uint32](t, 32))
	case chtype.UInt64:
		return typed(t, uintParser[uint64](t, 64))
	case chtype.Int8:
		return typed(t, intParser[int8](t, 8))
	case chtype.Int16:
		return typed(t, intParser[int16](t, 16))
	case chtype.Int32:
		return typed(t, intParser[int32](t, 32))
	case chtype.Int64:
		return typed(t, intParser[int64](t, 64))
	case chtype.Float64:
		return typed(t, floatParser(t))
	case chtype.DateTime:
		return typed(t, timeParser(t))
	}
	return nil
}

func nullableParser(elem *chtype.Type) func(n int) builder {
	switch elem.Kind {
	case chtype.String:
		return typed(elem, nullable(stringParser(elem)))
	case chtype.UInt64:
		return typed(elem, nullable(uintParser[uint64](elem, 64)))
	case chtype.Int64:
		return typed(elem, nullable(intParser[int64](elem, 64)))
	case chtype.Float64:
		return typed(elem, nullable(floatParser(elem)))
	case chtype.DateTime:
		return typed(elem, nullable(timeParser(elem)))
	}
	return nil
}

func arrayParser(elem *chtype.Type) func(n int) builder {
	switch elem.Kind {
	case chtype.String:
		return typed(elem, array(stringParser(elem)))
	case chtype.UInt64:
		return typed(elem, array(uintParser[uint64](elem, 64)))
	case chtype.Int64:
		return typed(elem, array(intParser[int64](elem, 64)))
	case chtype.Float64:
		return typed(elem, array(floatParser(elem)))
	}
	return nil
}

func nullable[T any](p func([]byte) (T, error)) func([]byte) (*T, error) {
	return func(e []byte) (*T, error) {
		if string(e) == "null" {
			return nil, nil
		}
		v, err := p(e)
		if err != nil {
			return nil, err
		}
		return &v, nil
	}
}

func array[T any](p func([]byte) (T, error)) func([]byte) ([]T, error) {
	return func(e []byte) ([]T, error) {
		out := []T{}
		ok, err := chtype.SplitArray(e, func(i int, elem []byte) error {
			v, err := p(elem)
			if err != nil {
				return &chtype.Error{Code: chtype.CodeInvalidValue, Path: "[" + strconv.Itoa(i) + "]", Message: err.Error()}
			}
			out = append(out, v)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &chtype.Error{Code: chtype.CodeTypeMismatch, Message: "expected an array"}
		}
		return out, nil
	}
}

// viaDriver converts with ToDriver and asserts the Go type.
func viaDriver[T any](t *chtype.Type, e []byte) (T, error) {
	var zero T
	v, err := t.ToDriver(e)
	if err != nil {
		return zero, err
	}
	out, ok := v.(T)
	if !ok {
		return zero, &chtype.Error{Code: chtype.CodeTypeMismatch, Message: fmt.Sprintf("%T for %s", v, t.Name)}
	}
	return out, nil
}

// bstr views b as a string without copying, for strconv parsers that do not retain it.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func simpleString(e []byte) bool {
	if len(e) < 2 || e[0] != '"' || e[len(e)-1] != '"' {
		return false
	}
	for _, c := range e[1 : len(e)-1] {
		if c == '\\' || c == '"' || c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

func stringParser(t *chtype.Type) func([]byte) (string, error) {
	return func(e []byte) (string, error) {
		if simpleString(e) {
			return string(e[1 : len(e)-1]), nil
		}
		return viaDriver[string](t, e)
	}
}

type unsigned interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}
type signed interface {
	~int8 | ~int16 | ~int32 | ~int64
}

func uintParser[T unsigned](t *chtype.Type, bits int) func([]byte) (T, error) {
	return func(e []byte) (T, error) {
		if len(e) > 0 && e[0] >= '0' && e[0] <= '9' {
			if v, err := strconv.ParseUint(bstr(e), 10, bits); err == nil {
				return T(v), nil
			}
		}
		return viaDriver[T](t, e)
	}
}

func intParser[T signed](t *chtype.Type, bits int) func([]byte) (T, error) {
	return func(e []byte) (T, error) {
		if len(e) > 0 && (e[0] >= '0' && e[0] <= '9' || e[0] == '-') {
			if v, err := strconv.ParseInt(bstr(e), 10, bits); err == nil {
				return T(v), nil
			}
		}
		return viaDriver[T](t, e)
	}
}

func floatParser(t *chtype.Type) func([]byte) (float64, error) {
	return func(e []byte) (float64, error) {
		if len(e) > 0 && (e[0] >= '0' && e[0] <= '9' || e[0] == '-') {
			if v, err := strconv.ParseFloat(bstr(e), 64); err == nil {
				return v, nil
			}
		}
		return viaDriver[float64](t, e)
	}
}

// timeParser reads the canonical "YYYY-MM-DD hh:mm:ss" directly; anything else goes through
// ToDriver, which accepts every form and checks ranges.
func timeParser(t *chtype.Type) func([]byte) (time.Time, error) {
	loc := t.Location()
	return func(e []byte) (time.Time, error) {
		if len(e) == 21 && e[0] == '"' && e[20] == '"' && e[5] == '-' && e[8] == '-' && e[11] == ' ' && e[14] == ':' && e[17] == ':' {
			y, ok1 := num(e[1:5])
			mo, ok2 := num(e[6:8])
			d, ok3 := num(e[9:11])
			h, ok4 := num(e[12:14])
			mi, ok5 := num(e[15:17])
			s, ok6 := num(e[18:20])
			if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && y >= 1970 && y <= 2105 && mo >= 1 && mo <= 12 && d >= 1 && d <= 28 && h < 24 && mi < 60 && s < 60 {
				return time.Date(y, time.Month(mo), d, h, mi, s, 0, loc), nil
			}
		}
		return viaDriver[time.Time](t, e)
	}
}

func num(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// rowBuilder is the generic path: ToDriver per value, AppendRow per value.
type rowBuilder struct {
	t    *chtype.Type
	vals []any
}

func (b *rowBuilder) add(e []byte) error {
	v, err := b.t.ToDriver(e)
	if err != nil {
		return err
	}
	b.vals = append(b.vals, v)
	return nil
}

func (b *rowBuilder) values() any { return b.vals }

func (b *rowBuilder) flush(col driver.BatchColumn) error {
	for _, v := range b.vals {
		if err := col.AppendRow(v); err != nil {
			return err
		}
	}
	return nil
}
