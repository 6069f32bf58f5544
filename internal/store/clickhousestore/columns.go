package clickhousestore

import (
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// builder accumulates one column of a batch from canonical values and hands it to the driver.
// Common scalar types, and Nullable and Array of them, are built as typed slices handed over in
// one call (skipping the driver's per-value reflection); other types go value by value through
// chtype's ToDriver.
type builder interface {
	// take converts the value starting at row[i] (no leading whitespace) and returns the index
	// just past it, or end < 0 when no JSON value starts there. On error or end < 0 the builder
	// is unchanged.
	take(row []byte, i int) (end int, err error)
	// flush appends the accumulated values to the driver's column.
	flush(col driver.BatchColumn) error
	// values returns the accumulated values as one slice, for tests.
	values() any
	// reset empties the builder for the next batch, keeping its capacity and dropping its
	// references to the previous batch's rows.
	reset()
}

// shape is how a fast-path column wraps its scalar type.
type shape uint8

const (
	shapePlain shape = iota
	shapeNullable
	shapeArray
)

// newBuilder returns the builder for a column of type t expecting n rows; escaped strings are
// decoded into ar.
func newBuilder(t *chtype.Type, n int, ar *arena) builder {
	base, lowCard := t, false
	for base.Kind == chtype.LowCardinality {
		base, lowCard = base.Elem, true
	}
	sh, elem := shapePlain, base
	switch base.Kind {
	case chtype.Nullable:
		sh, elem = shapeNullable, base.Elem
	case chtype.Array:
		sh, elem = shapeArray, base.Elem
	}
	switch elem.Kind {
	case chtype.String:
		return build(sh, t, n, stringParser(elem, !lowCard, ar))
	case chtype.UInt8:
		return build(sh, t, n, uintParser[uint8](elem))
	case chtype.UInt16:
		return build(sh, t, n, uintParser[uint16](elem))
	case chtype.UInt32:
		return build(sh, t, n, uintParser[uint32](elem))
	case chtype.UInt64:
		return build(sh, t, n, uintParser[uint64](elem))
	case chtype.Int8:
		return build(sh, t, n, intParser[int8](elem, 8))
	case chtype.Int16:
		return build(sh, t, n, intParser[int16](elem, 16))
	case chtype.Int32:
		return build(sh, t, n, intParser[int32](elem, 32))
	case chtype.Int64:
		return build(sh, t, n, intParser[int64](elem, 64))
	case chtype.Float32:
		return build(sh, t, n, floatParser[float32](elem, 32))
	case chtype.Float64:
		return build(sh, t, n, floatParser[float64](elem, 64))
	case chtype.Date:
		return build(sh, t, n, dateParser(elem))
	case chtype.DateTime:
		return build(sh, t, n, timeParser(elem))
	}
	return &rowBuilder{t: t, vals: make([]any, 0, n)}
}

func build[T any](sh shape, t *chtype.Type, n int, p parser[T]) builder {
	switch sh {
	case shapeNullable:
		return &nullBuilder[T]{vals: make([]*T, 0, n), p: p}
	case shapeArray:
		return &arrayBuilder[T]{t: t, ends: make([]int, 0, n), slab: make([]T, 0, n), p: p}
	}
	return &plainBuilder[T]{vals: make([]T, 0, n), p: p}
}

// plainBuilder builds a column of a scalar type.
type plainBuilder[T any] struct {
	vals []T
	p    parser[T]
}

func (b *plainBuilder[T]) take(row []byte, i int) (int, error) {
	v, end, err := b.p.take(row, i)
	if err == nil && end >= 0 {
		b.vals = append(b.vals, v)
	}
	return end, err
}

func (b *plainBuilder[T]) flush(col driver.BatchColumn) error { return col.Append(b.vals) }

func (b *plainBuilder[T]) values() any { return b.vals }

func (b *plainBuilder[T]) reset() {
	clear(b.vals)
	b.vals = b.vals[:0]
}

// nullBuilder builds a Nullable column as pointers into one slab, so a value costs no
// allocation of its own.
type nullBuilder[T any] struct {
	vals []*T
	slab []T
	p    parser[T]
}

func (b *nullBuilder[T]) take(row []byte, i int) (int, error) {
	if end := i + 4; end <= len(row) && string(row[i:end]) == "null" && delim(row, end) {
		b.vals = append(b.vals, nil)
		return end, nil
	}
	v, end, err := b.p.take(row, i)
	if err != nil || end < 0 {
		return end, err
	}
	if len(b.slab) == cap(b.slab) {
		// Earlier pointers keep the old slab alive; only new values go to the new one.
		b.slab = make([]T, 0, max(cap(b.vals)-len(b.vals), 16))
	}
	b.slab = append(b.slab, v)
	b.vals = append(b.vals, &b.slab[len(b.slab)-1])
	return end, nil
}

func (b *nullBuilder[T]) flush(col driver.BatchColumn) error { return col.Append(b.vals) }

func (b *nullBuilder[T]) values() any { return b.vals }

func (b *nullBuilder[T]) reset() {
	clear(b.vals)
	clear(b.slab)
	b.vals, b.slab = b.vals[:0], b.slab[:0]
}

// arrayBuilder builds an Array column: all elements in one slab, each row ending at ends[i].
type arrayBuilder[T any] struct {
	t    *chtype.Type
	ends []int
	slab []T
	p    parser[T]
}

func (b *arrayBuilder[T]) take(row []byte, i int) (int, error) {
	if i >= len(row) {
		return -1, nil
	}
	mark := len(b.slab)
	if end, ok := b.fast(row, i); ok {
		b.ends = append(b.ends, len(b.slab))
		return end, nil
	}
	b.slab = b.slab[:mark]
	end := chtype.SkipValue(row, i)
	if end < 0 || end == i {
		return -1, nil
	}
	if err := b.slowAdd(row[i:end]); err != nil {
		b.slab = b.slab[:mark]
		return end, err
	}
	b.ends = append(b.ends, len(b.slab))
	return end, nil
}

// fast reads the array starting at row[i] element by element in one pass, appending to slab.
// It reports false, leaving elements on the slab for the caller to drop, on anything it does
// not accept, which slowAdd then decides.
func (b *arrayBuilder[T]) fast(row []byte, i int) (int, bool) {
	if row[i] != '[' {
		return 0, false
	}
	k := skipWS(row, i+1)
	if k < len(row) && row[k] == ']' {
		return k + 1, true
	}
	for {
		v, end, err := b.p.take(row, k)
		if err != nil || end < 0 {
			return 0, false
		}
		b.slab = append(b.slab, v)
		k = skipWS(row, end)
		if k >= len(row) {
			return 0, false
		}
		switch row[k] {
		case ',':
			k = skipWS(row, k+1)
		case ']':
			return k + 1, true
		default:
			return 0, false
		}
	}
}

// slowAdd converts the whole array e element by element; an error is ToDriver's for e, so
// messages and paths ("[2]") are the same as on the generic path.
func (b *arrayBuilder[T]) slowAdd(e []byte) error {
	var sc chtype.ArrayScanner
	sc.Reset(e)
	var fail error
	for el, ok := sc.Next(); ok && fail == nil; el, ok = sc.Next() {
		v, err := b.p.slow(el)
		if err != nil {
			fail = err
			break
		}
		b.slab = append(b.slab, v)
	}
	if fail == nil && sc.Valid() {
		return nil
	}
	if _, err := b.t.ToDriver(e); err != nil {
		return err
	}
	if fail == nil {
		fail = &chtype.Error{Code: chtype.CodeInvalidValue, Message: "malformed JSON array"}
	}
	return fail
}

// flush appends row by row: the driver's Array column takes a typed slice per row without
// reflection, but reflects over a slice of rows.
func (b *arrayBuilder[T]) flush(col driver.BatchColumn) error {
	start := 0
	for _, end := range b.ends {
		if err := col.AppendRow(b.slab[start:end:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

func (b *arrayBuilder[T]) reset() {
	clear(b.slab[:cap(b.slab)]) // a refused array may have left values past len
	b.slab, b.ends = b.slab[:0], b.ends[:0]
}

func (b *arrayBuilder[T]) values() any {
	out := make([][]T, len(b.ends))
	start := 0
	for i, end := range b.ends {
		out[i] = b.slab[start:end:end]
		start = end
	}
	return out
}

// rowBuilder is the generic path: ToDriver per value, AppendRow per value.
type rowBuilder struct {
	t    *chtype.Type
	vals []any
}

func (b *rowBuilder) take(row []byte, i int) (int, error) {
	end := chtype.SkipValue(row, i)
	if end < 0 || end == i {
		return -1, nil
	}
	v, err := b.t.ToDriver(row[i:end])
	if err != nil {
		return end, err
	}
	b.vals = append(b.vals, v)
	return end, nil
}

func (b *rowBuilder) values() any { return b.vals }

func (b *rowBuilder) reset() {
	clear(b.vals)
	b.vals = b.vals[:0]
}

func (b *rowBuilder) flush(col driver.BatchColumn) error {
	for _, v := range b.vals {
		if err := col.AppendRow(v); err != nil {
			return err
		}
	}
	return nil
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
