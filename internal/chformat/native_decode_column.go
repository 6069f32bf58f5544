package chformat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// values is a column's values as canonical JSON: value i is buf[ends[i-1]:ends[i]].
type values struct {
	buf  []byte
	ends []int
}

func (v *values) at(i int) []byte {
	lo := 0
	if i > 0 {
		lo = v.ends[i-1]
	}
	return v.buf[lo:v.ends[i]]
}

func (v *values) add(b []byte) {
	v.buf = append(v.buf, b...)
	v.ends = append(v.ends, len(v.buf))
}

// valueError is bad data at value index of the column being read, an index the caller maps to
// its own row.
type valueError struct {
	index int
	err   error
}

func (e *valueError) Error() string { return e.err.Error() }

func valueErr(i int, format string, args ...any) error {
	return &valueError{index: i, err: fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)}
}

// leafErr is the valueError of a refused value of t at index i: ErrInvalidValue with chtype's
// error (valueInvalid), else ErrMalformed.
func leafErr(i int, t *chtype.Type, err error) error {
	if ie := valueInvalid(err); ie != nil {
		return &valueError{index: i, err: ie}
	}
	return valueErr(i, "%s value", t.Name)
}

// valueInvalid is ErrInvalidValue wrapping err when chtype refused a well-formed value (an
// *chtype.Error: an enum value its type does not name), else nil.
func valueInvalid(err error) error {
	var ce *chtype.Error
	if !errors.As(err, &ce) {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidValue, ce)
}

// isNothing reports the Nothing type (the element of an empty array literal, NULL's type inside
// Nullable), whose every value is a placeholder byte.
func isNothing(t *chtype.Type) bool { return t.Kind == chtype.Unsupported && t.Name == "Nothing" }

// isLeaf reports the types whose Native column data is its values' RowBinary encodings one
// after another, which chtype reads.
func isLeaf(t *chtype.Type) bool {
	switch t.Kind {
	case chtype.Unsupported, chtype.JSON, chtype.Nullable, chtype.LowCardinality, chtype.Array, chtype.Tuple, chtype.Map:
		return false
	}
	return true
}

// nativeSupported reports whether readColumn can read columns of t.
func nativeSupported(t *chtype.Type) bool {
	switch t.Kind {
	case chtype.Unsupported:
		return isNothing(t)
	case chtype.JSON:
		return false
	case chtype.Nullable, chtype.Array:
		return nativeSupported(t.Elem)
	case chtype.LowCardinality:
		e := t.Elem
		if e.Kind == chtype.Nullable {
			e = e.Elem
		}
		return isLeaf(e)
	case chtype.Map:
		return nativeSupported(t.Key) && nativeSupported(t.Value)
	case chtype.Tuple:
		for _, f := range t.Fields {
			if !nativeSupported(f.Type) {
				return false
			}
		}
	}
	return true
}

// lowCardinalityKeysVersion is SharedDictionariesWithAdditionalKeys, the only keys
// serialization ClickHouse writes.
const lowCardinalityKeysVersion = 1

// readPrefix reads the column's serialization state prefix, written for the whole type tree
// before any data: one keys version per LowCardinality in it, in type order.
func readPrefix(r *reader, t *chtype.Type) error {
	switch t.Kind {
	case chtype.LowCardinality:
		v, ok := r.u64()
		if !ok || v != lowCardinalityKeysVersion {
			return fmt.Errorf("%w: LowCardinality keys serialization version", ErrMalformed)
		}
	case chtype.Nullable, chtype.Array:
		return readPrefix(r, t.Elem)
	case chtype.Map:
		if err := readPrefix(r, t.Key); err != nil {
			return err
		}
		return readPrefix(r, t.Value)
	case chtype.Tuple:
		for _, f := range t.Fields {
			if err := readPrefix(r, f.Type); err != nil {
				return err
			}
		}
	}
	return nil
}

// readColumn reads n values of t. Every value takes at least one byte, which bounds n by what
// is left before anything is sized by it.
func readColumn(r *reader, t *chtype.Type, n int) (values, error) {
	if n > r.rest() {
		return values{}, valueErr(r.rest(), "%s column of %d values ends early", t.Name, n)
	}
	v := values{ends: make([]int, 0, n)}
	switch {
	case isLeaf(t):
		for i := 0; i < n; i++ {
			out, k, err := t.AppendCanonicalRowBinary(v.buf, r.b[r.off:])
			if err != nil {
				return values{}, leafErr(i, t, err)
			}
			v.buf, r.off = out, r.off+k
			v.ends = append(v.ends, len(v.buf))
		}
		return v, nil
	case isNothing(t):
		r.off += n
		for i := 0; i < n; i++ {
			v.add([]byte("null"))
		}
		return v, nil
	}
	switch t.Kind {
	case chtype.Nullable:
		return readNullable(r, t, n)
	case chtype.Array, chtype.Map:
		return readArray(r, t, n)
	case chtype.Tuple:
		return readTuple(r, t, n)
	case chtype.LowCardinality:
		return readLowCardinality(r, t, n)
	}
	return values{}, fmt.Errorf("%w: %s", ErrUnsupportedType, t.Name)
}

func readNullable(r *reader, t *chtype.Type, n int) (values, error) {
	nulls, _ := r.take(uint64(n)) // readColumn checked n bytes are there
	for i, f := range nulls {
		if f > 1 {
			return values{}, valueErr(i, "null flag %d of %s", f, t.Name)
		}
	}
	inner, err := readColumn(r, t.Elem, n)
	if err != nil {
		return values{}, err
	}
	v := values{buf: make([]byte, 0, len(inner.buf)), ends: make([]int, 0, n)}
	for i, f := range nulls {
		if f == 1 {
			v.add([]byte("null"))
		} else {
			v.add(inner.at(i))
		}
	}
	return v, nil
}

// readArray reads Array(T) as its n end offsets then the flattened elements, and Map(K, V) the
// same way with its keys column then its values column as the elements.
func readArray(r *reader, t *chtype.Type, n int) (values, error) {
	offsets := make([]int, n)
	prev := uint64(0)
	for i := range offsets {
		o, ok := r.u64()
		if !ok {
			return values{}, valueErr(i, "%s offsets end early", t.Name)
		}
		if o < prev || o > uint64(r.rest()) { // each element takes a byte at least
			return values{}, valueErr(i, "%s offset %d after %d", t.Name, o, prev)
		}
		offsets[i], prev = int(o), o
	}
	total := 0
	if n > 0 {
		total = offsets[n-1]
	}
	// elemRow maps an error at element j back to the row holding it.
	elemRow := func(err error) error {
		if ve, ok := err.(*valueError); ok {
			ve.index = sort.Search(n, func(i int) bool { return offsets[i] > ve.index })
		}
		return err
	}
	v := values{ends: make([]int, 0, n)}
	if t.Kind == chtype.Array {
		elems, err := readColumn(r, t.Elem, total)
		if err != nil {
			return values{}, elemRow(err)
		}
		lo := 0
		for _, hi := range offsets {
			v.buf = append(v.buf, '[')
			for j := lo; j < hi; j++ {
				if j > lo {
					v.buf = append(v.buf, ',')
				}
				v.buf = append(v.buf, elems.at(j)...)
			}
			v.buf = append(v.buf, ']')
			v.ends = append(v.ends, len(v.buf))
			lo = hi
		}
		return v, nil
	}
	keys, err := readColumn(r, t.Key, total)
	if err != nil {
		return values{}, elemRow(err)
	}
	vals, err := readColumn(r, t.Value, total)
	if err != nil {
		return values{}, elemRow(err)
	}
	lo := 0
	for _, hi := range offsets {
		v.buf = append(v.buf, '{')
		for j := lo; j < hi; j++ {
			if j > lo {
				v.buf = append(v.buf, ',')
			}
			// Canonical map keys are JSON strings, as chtype writes them.
			if k := keys.at(j); len(k) > 0 && k[0] == '"' {
				v.buf = append(v.buf, k...)
			} else {
				v.buf = chtype.AppendString(v.buf, k)
			}
			v.buf = append(v.buf, ':')
			v.buf = append(v.buf, vals.at(j)...)
		}
		v.buf = append(v.buf, '}')
		v.ends = append(v.ends, len(v.buf))
		lo = hi
	}
	return v, nil
}

func readTuple(r *reader, t *chtype.Type, n int) (values, error) {
	fields := make([]values, len(t.Fields))
	for i, f := range t.Fields {
		var err error
		if fields[i], err = readColumn(r, f.Type, n); err != nil {
			return values{}, err
		}
	}
	v := values{ends: make([]int, 0, n)}
	for i := 0; i < n; i++ {
		v.buf = append(v.buf, '[')
		for j := range fields {
			if j > 0 {
				v.buf = append(v.buf, ',')
			}
			v.buf = append(v.buf, fields[j].at(i)...)
		}
		v.buf = append(v.buf, ']')
		v.ends = append(v.ends, len(v.buf))
	}
	return v, nil
}

// The LowCardinality index serialization word: the index width in the low byte, then flags.
const (
	lcIndexTypeMask      = 0xff
	lcNeedGlobalDict     = 1 << 8
	lcHasAdditionalKeys  = 1 << 9
	lcNeedUpdateDict     = 1 << 10
	lcKnownFlags         = lcNeedGlobalDict | lcHasAdditionalKeys | lcNeedUpdateDict | lcIndexTypeMask
	lcMaxIndexWidthShift = 3 // UInt8, UInt16, UInt32, UInt64
)

// readLowCardinality reads n values as chunks of (index word, additional keys, row count,
// indexes) until n rows are read. Native carries no global dictionary: every chunk brings its
// own keys. In LowCardinality(Nullable(T)) the keys are T values and index 0 is NULL.
func readLowCardinality(r *reader, t *chtype.Type, n int) (values, error) {
	keyType, nullable := t.Elem, false
	if keyType.Kind == chtype.Nullable {
		keyType, nullable = keyType.Elem, true
	}
	v := values{ends: make([]int, 0, n)}
	if n == 0 {
		skipEmptyLowCardinality(r, keyType)
	}
	for got := 0; got < n; {
		word, ok := r.u64()
		if !ok {
			return values{}, valueErr(got, "%s index type ends early", t.Name)
		}
		if word&^lcKnownFlags != 0 || word&lcIndexTypeMask > lcMaxIndexWidthShift {
			return values{}, valueErr(got, "%s index type %#x", t.Name, word)
		}
		if word&lcNeedGlobalDict != 0 {
			return values{}, &valueError{index: got, err: fmt.Errorf("%w: %s with a global dictionary", ErrUnsupportedType, t.Name)}
		}
		if word&lcHasAdditionalKeys == 0 {
			return values{}, valueErr(got, "%s chunk without keys", t.Name)
		}
		nkeys, ok := r.u64()
		if !ok || nkeys > uint64(r.rest()) {
			return values{}, valueErr(got, "%s key count", t.Name)
		}
		keys, err := readColumn(r, keyType, int(nkeys))
		if err != nil {
			return values{}, &valueError{index: got, err: unwrapValue(err)}
		}
		rows, ok := r.u64()
		if !ok || rows == 0 || rows > uint64(n-got) {
			return values{}, valueErr(got, "%s chunk of %d rows with %d left", t.Name, rows, n-got)
		}
		width := 1 << (word & lcIndexTypeMask)
		idx, ok := r.take(rows * uint64(width))
		if !ok {
			return values{}, valueErr(got, "%s indexes end early", t.Name)
		}
		for i := 0; i < int(rows); i++ {
			k := readIndex(idx[i*width:], width)
			switch {
			case k >= nkeys:
				return values{}, valueErr(got+i, "%s index %d outside its %d keys", t.Name, k, nkeys)
			case nullable && k == 0:
				v.add([]byte("null"))
			default:
				key := keys.at(int(k))
				if r.expand -= len(key); r.expand < 0 {
					return values{}, &valueError{index: got + i, err: fmt.Errorf("%w: %s expands beyond %d bytes", ErrTooLarge, t.Name, maxExpansion(len(r.b)))}
				}
				v.add(key)
			}
		}
		got += int(rows)
	}
	return v, nil
}

// skipEmptyLowCardinality consumes the chunk of no rows ClickHouse 18.16 writes for an empty
// LowCardinality column (the elements of empty arrays; later servers write nothing): an index
// word with keys, the keys, and a row count of 0. Anything else is left unread.
func skipEmptyLowCardinality(r *reader, keyType *chtype.Type) {
	save := r.off
	word, ok := r.u64()
	if ok && word&^(lcHasAdditionalKeys|lcNeedUpdateDict|lcIndexTypeMask) == 0 && word&lcHasAdditionalKeys != 0 &&
		word&lcIndexTypeMask <= lcMaxIndexWidthShift {
		if nkeys, ok := r.u64(); ok && nkeys <= uint64(r.rest()) {
			if _, err := readColumn(r, keyType, int(nkeys)); err == nil {
				if rows, ok := r.u64(); ok && rows == 0 {
					return
				}
			}
		}
	}
	r.off = save
}

func readIndex(b []byte, width int) uint64 {
	switch width {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func unwrapValue(err error) error {
	if ve, ok := err.(*valueError); ok {
		return ve.err
	}
	return err
}
