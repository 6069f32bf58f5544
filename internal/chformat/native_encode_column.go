package chformat

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// nativeColumn accumulates the values of one column (or of a nested part of one) for a block.
// Native is columnar: a column's data is its values one after the other, a Nullable's null map
// before its values, an Array's offsets before its flattened elements, a Tuple's element
// columns one after the other; a LowCardinality column also has a state prefix, written before
// any data of the column it is part of.
type nativeColumn interface {
	// add appends one canonical value.
	add(v []byte) error
	// count returns the number of values held.
	count() int
	// truncate drops the values after the first n.
	truncate(n int)
	appendPrefix(dst []byte) []byte
	appendData(dst []byte) []byte
	// reset empties the column for the next block.
	reset()
	size() int
}

var errNull = errors.New("null in a column that is not Nullable")

func newNativeColumn(t *chtype.Type) (nativeColumn, error) {
	switch t.Kind {
	case chtype.Nullable:
		inner, ok := newLeaf(t.Elem)
		if !ok {
			return nil, fmt.Errorf("Native encoding of %s is not supported", t.Name)
		}
		return &nullableColumn{inner: inner}, nil
	case chtype.LowCardinality:
		base, nullable := t.Elem, false
		if base.Kind == chtype.Nullable {
			base, nullable = base.Elem, true
		}
		dict, ok := newLeaf(base)
		if !ok {
			return nil, fmt.Errorf("Native encoding of %s is not supported", t.Name)
		}
		c := &lowCardColumn{dict: dict, nullable: nullable, index: map[string]uint64{}}
		c.reset()
		return c, nil
	case chtype.Array:
		inner, err := newNativeColumn(t.Elem)
		if err != nil {
			return nil, err
		}
		return &arrayColumn{inner: inner}, nil
	case chtype.Map:
		keys, err := newNativeColumn(t.Key)
		if err != nil {
			return nil, err
		}
		values, err := newNativeColumn(t.Value)
		if err != nil {
			return nil, err
		}
		return &mapColumn{keyType: t.Key, keys: keys, values: values}, nil
	case chtype.Tuple:
		c := &tupleColumn{}
		for _, f := range t.Fields {
			fc, err := newNativeColumn(f.Type)
			if err != nil {
				return nil, err
			}
			c.fields = append(c.fields, fc)
		}
		return c, nil
	}
	leaf, ok := newLeaf(t)
	if !ok {
		return nil, fmt.Errorf("Native encoding of %s is not supported", t.Name)
	}
	return leaf, nil
}

// leafColumn holds values of a scalar type, each in its RowBinary encoding, which is also its
// Native encoding.
type leafColumn struct {
	t    *chtype.Type
	buf  []byte
	ends []int
	zero []byte
}

func newLeaf(t *chtype.Type) (*leafColumn, bool) {
	w, ok := zeroWidth(t)
	if !ok || !t.RowBinarySupported() {
		return nil, false
	}
	return &leafColumn{t: t, zero: make([]byte, w)}, true
}

// zeroWidth is the length of the default value of a scalar type in RowBinary (all zero bytes; a
// String's is its empty length).
func zeroWidth(t *chtype.Type) (int, bool) {
	switch t.Kind {
	case chtype.String, chtype.JSON:
		return 1, true
	case chtype.FixedString:
		return t.Len, true
	case chtype.Int8, chtype.UInt8, chtype.Bool, chtype.Enum8:
		return 1, true
	case chtype.Int16, chtype.UInt16, chtype.Date, chtype.Enum16:
		return 2, true
	case chtype.Int32, chtype.UInt32, chtype.Float32, chtype.Date32, chtype.DateTime, chtype.IPv4:
		return 4, true
	case chtype.Int64, chtype.UInt64, chtype.Float64, chtype.DateTime64:
		return 8, true
	case chtype.Int128, chtype.UInt128, chtype.UUID, chtype.IPv6:
		return 16, true
	case chtype.Int256, chtype.UInt256:
		return 32, true
	case chtype.Decimal:
		switch {
		case t.Precision <= 9:
			return 4, true
		case t.Precision <= 18:
			return 8, true
		case t.Precision <= 38:
			return 16, true
		}
		return 32, true
	}
	return 0, false
}

func (c *leafColumn) add(v []byte) error {
	if len(v) == 4 && string(v) == "null" {
		return errNull
	}
	out, err := c.t.AppendRowBinary(c.buf, v)
	if err != nil {
		return err
	}
	c.buf = out
	c.ends = append(c.ends, len(c.buf))
	return nil
}

func (c *leafColumn) addZero() {
	c.buf = append(c.buf, c.zero...)
	c.ends = append(c.ends, len(c.buf))
}

func (c *leafColumn) count() int { return len(c.ends) }

func (c *leafColumn) truncate(n int) {
	if n >= len(c.ends) {
		return
	}
	c.ends = c.ends[:n]
	c.buf = c.buf[:c.end(n)]
}

func (c *leafColumn) end(n int) int {
	if n == 0 {
		return 0
	}
	return c.ends[n-1]
}

func (c *leafColumn) appendPrefix(dst []byte) []byte { return dst }
func (c *leafColumn) appendData(dst []byte) []byte   { return append(dst, c.buf...) }
func (c *leafColumn) reset()                         { c.buf, c.ends = c.buf[:0], c.ends[:0] }
func (c *leafColumn) size() int                      { return len(c.buf) + 8*len(c.ends) }

// nullableColumn is a null map (1 = NULL) followed by the values, a default one for each NULL.
type nullableColumn struct {
	nulls []byte
	inner *leafColumn
}

func (c *nullableColumn) add(v []byte) error {
	if len(v) == 4 && string(v) == "null" {
		c.nulls = append(c.nulls, 1)
		c.inner.addZero()
		return nil
	}
	if err := c.inner.add(v); err != nil {
		return err
	}
	c.nulls = append(c.nulls, 0)
	return nil
}

func (c *nullableColumn) count() int { return len(c.nulls) }
func (c *nullableColumn) truncate(n int) {
	if n < len(c.nulls) {
		c.nulls = c.nulls[:n]
	}
	c.inner.truncate(n)
}
func (c *nullableColumn) appendPrefix(dst []byte) []byte { return dst }
func (c *nullableColumn) appendData(dst []byte) []byte {
	return c.inner.appendData(append(dst, c.nulls...))
}
func (c *nullableColumn) reset()    { c.nulls = c.nulls[:0]; c.inner.reset() }
func (c *nullableColumn) size() int { return len(c.nulls) + c.inner.size() }

// arrayColumn is the cumulative end offsets (UInt64) followed by the elements' column.
type arrayColumn struct {
	offsets []uint64
	inner   nativeColumn
	scan    chtype.ArrayScanner
}

func (c *arrayColumn) add(v []byte) error {
	start := c.inner.count()
	c.scan.Reset(v)
	for e, ok := c.scan.Next(); ok; e, ok = c.scan.Next() {
		if err := c.inner.add(e); err != nil {
			c.inner.truncate(start)
			return err
		}
	}
	if !c.scan.Valid() {
		c.inner.truncate(start)
		return fmt.Errorf("not a JSON array: %.40q", v)
	}
	c.offsets = append(c.offsets, uint64(c.inner.count()))
	return nil
}

func (c *arrayColumn) count() int { return len(c.offsets) }
func (c *arrayColumn) truncate(n int) {
	if n >= len(c.offsets) {
		return
	}
	c.offsets = c.offsets[:n]
	end := 0
	if n > 0 {
		end = int(c.offsets[n-1])
	}
	c.inner.truncate(end)
}
func (c *arrayColumn) appendPrefix(dst []byte) []byte { return c.inner.appendPrefix(dst) }
func (c *arrayColumn) appendData(dst []byte) []byte {
	for _, o := range c.offsets {
		dst = binary.LittleEndian.AppendUint64(dst, o)
	}
	return c.inner.appendData(dst)
}
func (c *arrayColumn) reset()    { c.offsets = c.offsets[:0]; c.inner.reset() }
func (c *arrayColumn) size() int { return 8*len(c.offsets) + c.inner.size() }

// mapColumn is a Map, stored as Array(Tuple(K, V)): offsets, the keys' column, the values'.
type mapColumn struct {
	offsets      []uint64
	keyType      *chtype.Type
	keys, values nativeColumn
}

func (c *mapColumn) add(v []byte) error {
	start := c.keys.count()
	err := EachMember(v, func(k, e []byte) error {
		if err := c.keys.add(MapKey(c.keyType, k)); err != nil {
			return err
		}
		if err := c.values.add(e); err != nil {
			c.keys.truncate(c.keys.count() - 1)
			return err
		}
		return nil
	})
	if err != nil {
		c.keys.truncate(start)
		c.values.truncate(start)
		return err
	}
	c.offsets = append(c.offsets, uint64(c.keys.count()))
	return nil
}

func (c *mapColumn) count() int { return len(c.offsets) }
func (c *mapColumn) truncate(n int) {
	if n >= len(c.offsets) {
		return
	}
	c.offsets = c.offsets[:n]
	end := 0
	if n > 0 {
		end = int(c.offsets[n-1])
	}
	c.keys.truncate(end)
	c.values.truncate(end)
}
func (c *mapColumn) appendPrefix(dst []byte) []byte {
	return c.values.appendPrefix(c.keys.appendPrefix(dst))
}
func (c *mapColumn) appendData(dst []byte) []byte {
	for _, o := range c.offsets {
		dst = binary.LittleEndian.AppendUint64(dst, o)
	}
	return c.values.appendData(c.keys.appendData(dst))
}
func (c *mapColumn) reset()    { c.offsets = c.offsets[:0]; c.keys.reset(); c.values.reset() }
func (c *mapColumn) size() int { return 8*len(c.offsets) + c.keys.size() + c.values.size() }

// tupleColumn is its element columns one after the other.
type tupleColumn struct {
	fields []nativeColumn
	n      int
	scan   chtype.ArrayScanner
}

func (c *tupleColumn) add(v []byte) error {
	c.scan.Reset(v)
	i := 0
	for e, ok := c.scan.Next(); ok && i < len(c.fields); e, ok = c.scan.Next() {
		if err := c.fields[i].add(e); err != nil {
			c.truncateFields(i)
			return err
		}
		i++
	}
	if i != len(c.fields) || !c.scan.Valid() || c.scan.Len() != len(c.fields) {
		c.truncateFields(i)
		return fmt.Errorf("not a JSON array of %d tuple elements: %.40q", len(c.fields), v)
	}
	c.n++
	return nil
}

func (c *tupleColumn) truncateFields(k int) {
	for _, f := range c.fields[:k] {
		f.truncate(c.n)
	}
}

func (c *tupleColumn) count() int { return c.n }
func (c *tupleColumn) truncate(n int) {
	if n >= c.n {
		return
	}
	c.n = n
	for _, f := range c.fields {
		f.truncate(n)
	}
}
func (c *tupleColumn) appendPrefix(dst []byte) []byte {
	for _, f := range c.fields {
		dst = f.appendPrefix(dst)
	}
	return dst
}
func (c *tupleColumn) appendData(dst []byte) []byte {
	for _, f := range c.fields {
		dst = f.appendData(dst)
	}
	return dst
}
func (c *tupleColumn) reset() {
	c.n = 0
	for _, f := range c.fields {
		f.reset()
	}
}
func (c *tupleColumn) size() int {
	n := 0
	for _, f := range c.fields {
		n += f.size()
	}
	return n
}

// LowCardinality serialization (ClickHouse's SerializationLowCardinality): the state prefix is
// the keys version; the data is the index type with its flags, the dictionary (the inner type,
// not Nullable; for LowCardinality(Nullable) entry 0 stands for NULL, and entry 0, or 1 when
// Nullable, is the default value), then one index per row.
type lowCardColumn struct {
	dict     *leafColumn
	nullable bool
	index    map[string]uint64
	keys     []uint64
}

func (c *lowCardColumn) add(v []byte) error {
	if len(v) == 4 && string(v) == "null" {
		if !c.nullable {
			return errNull
		}
		c.keys = append(c.keys, 0)
		return nil
	}
	if k, ok := c.index[string(v)]; ok {
		c.keys = append(c.keys, k)
		return nil
	}
	if err := c.dict.add(v); err != nil {
		return err
	}
	k := uint64(c.dict.count() - 1)
	c.index[string(v)] = k
	c.keys = append(c.keys, k)
	return nil
}

func (c *lowCardColumn) count() int { return len(c.keys) }
func (c *lowCardColumn) truncate(n int) {
	if n < len(c.keys) {
		c.keys = c.keys[:n]
	}
}
func (c *lowCardColumn) appendPrefix(dst []byte) []byte {
	return binary.LittleEndian.AppendUint64(dst, lowCardinalityKeysVersion)
}

func (c *lowCardColumn) appendData(dst []byte) []byte {
	n := c.dict.count()
	width, kind := 1, uint64(0)
	switch {
	case n > 1<<32:
		width, kind = 8, 3
	case n > 1<<16:
		width, kind = 4, 2
	case n > 1<<8:
		width, kind = 2, 1
	}
	dst = binary.LittleEndian.AppendUint64(dst, kind|lcHasAdditionalKeys|lcNeedUpdateDict)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(n))
	dst = c.dict.appendData(dst)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(c.keys)))
	for _, k := range c.keys {
		switch width {
		case 1:
			dst = append(dst, byte(k))
		case 2:
			dst = binary.LittleEndian.AppendUint16(dst, uint16(k))
		case 4:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(k))
		default:
			dst = binary.LittleEndian.AppendUint64(dst, k)
		}
	}
	return dst
}

// reset starts a new dictionary holding the default entries.
func (c *lowCardColumn) reset() {
	c.keys = c.keys[:0]
	c.dict.reset()
	clear(c.index)
	c.dict.addZero()
	if c.nullable {
		c.dict.addZero()
	}
}

func (c *lowCardColumn) size() int { return c.dict.size() + 8*len(c.keys) + 48*len(c.index) }
