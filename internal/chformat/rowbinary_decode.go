package chformat

import (
	"encoding/binary"
	"fmt"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// DecodeRowBinary converts a RowBinary body to canonical JSON rows appended to dst. names and
// types are the columns the rows hold, in order (the table's columns or the INSERT's column
// list). With withNamesAndTypes the body starts with the RowBinaryWithNamesAndTypes header (a
// uvarint column count, the names, then the type strings); the rows then hold the header's
// columns in the header's order, each of which must be one of names with the same type (up to
// white space, time zones and LowCardinality, which the bytes do not carry), else the error
// wraps ErrHeaderMismatch and names the column; Decoded.Types are then the expected types of
// the header's columns, which the values are read with. With no names at all the header is
// taken as it is.
//
// Values are read by chtype's AppendCanonicalRowBinary, so a row decodes to exactly the
// canonical form the gateway's own RowBinary encoding reads back as. Rows continue to the end
// of src; a row that ends early or holds a value its type cannot have is a *RowError naming
// the row and the column. On error the returned JSON is dst at its original length.
func DecodeRowBinary(src []byte, names, types []string, withNamesAndTypes bool, dst []byte) (Decoded, error) {
	start := len(dst)
	fail := func(err error) (Decoded, error) { return Decoded{JSON: dst[:start]}, err }
	if len(names) != len(types) {
		return fail(fmt.Errorf("%w: %d column names for %d types", ErrHeaderMismatch, len(names), len(types)))
	}
	off := 0
	if withNamesAndTypes && len(src) > 0 {
		hn, ht, n, err := readNamesAndTypes(src)
		if err != nil {
			return fail(err)
		}
		if e := newExpected(names, types); e != nil {
			seen := make(map[string]bool, len(hn))
			for i, name := range hn {
				if seen[name] {
					return fail(fmt.Errorf("%w: column %q appears twice in the header", ErrHeaderMismatch, name))
				}
				seen[name] = true
				if ht[i], err = e.conform(name, ht[i], false); err != nil {
					return fail(err)
				}
			}
		}
		names, types, off = hn, ht, n
	}
	cols := make([]*chtype.Type, len(types))
	for i, s := range types {
		t, err := chtype.Parse(s)
		if err != nil {
			return fail(fmt.Errorf("%w: column %q: %w", ErrUnsupportedType, names[i], err))
		}
		if !t.RowBinarySupported() || t.HasJSON() {
			return fail(fmt.Errorf("%w: column %q has type %s, which RowBinary input does not support", ErrUnsupportedType, names[i], s))
		}
		cols[i] = t
	}
	if len(cols) == 0 && off < len(src) {
		return fail(&RowError{Err: fmt.Errorf("%w: %d bytes of rows for no columns", ErrMalformed, len(src)-off)})
	}
	rows := 0
	for off < len(src) {
		dst = append(dst, '[')
		for i, t := range cols {
			if i > 0 {
				dst = append(dst, ',')
			}
			out, n, err := t.AppendCanonicalRowBinary(dst, src[off:])
			if err != nil {
				if ie := valueInvalid(err); ie != nil {
					return fail(&RowError{Row: rows, Column: names[i], Err: ie})
				}
				return fail(&RowError{Row: rows, Column: names[i], Err: fmt.Errorf("%w: %s value", ErrMalformed, types[i])})
			}
			dst, off = out, off+n
		}
		dst = append(dst, ']', '\n')
		rows++
	}
	return Decoded{Names: names, Types: types, Rows: rows, JSON: dst}, nil
}

// readNamesAndTypes reads the RowBinaryWithNamesAndTypes header and returns the bytes it took.
func readNamesAndTypes(src []byte) (names, types []string, n int, err error) {
	r := &reader{b: src}
	cnt, ok := r.uvarint()
	// Every name and type takes at least its one-byte length.
	if !ok || cnt > uint64(len(src)) {
		return nil, nil, 0, &RowError{Err: fmt.Errorf("%w: RowBinaryWithNamesAndTypes header: column count", ErrMalformed)}
	}
	names, types = make([]string, cnt), make([]string, cnt)
	for _, list := range [][]string{names, types} {
		for i := range list {
			s, ok := r.str()
			if !ok {
				return nil, nil, 0, &RowError{Err: fmt.Errorf("%w: RowBinaryWithNamesAndTypes header ends inside its %d column names and types", ErrMalformed, cnt)}
			}
			list[i] = s
		}
	}
	return names, types, r.off, nil
}

// reader reads the primitives of ClickHouse's binary formats from b, never past its end.
type reader struct {
	b   []byte
	off int
	// expand is what is left of the Native decoder's budget of LowCardinality expansion.
	expand int
}

func (r *reader) rest() int { return len(r.b) - r.off }

func (r *reader) uvarint() (uint64, bool) {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		return 0, false
	}
	r.off += n
	return v, true
}

func (r *reader) take(n uint64) ([]byte, bool) {
	if n > uint64(r.rest()) {
		return nil, false
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, true
}

func (r *reader) str() (string, bool) {
	n, ok := r.uvarint()
	if !ok {
		return "", false
	}
	b, ok := r.take(n)
	return string(b), ok
}

func (r *reader) u64() (uint64, bool) {
	b, ok := r.take(8)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b), true
}
