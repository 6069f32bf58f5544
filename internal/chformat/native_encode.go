package chformat

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// Protocol revisions the Native encoder distinguishes (ClickHouse's src/Core/ProtocolDefines.h).
const (
	// revisionWithBlockInfo: blocks start with a BlockInfo (any revision above 0).
	revisionWithBlockInfo = 1
	// revisionWithCustomSerialization: every column header carries a has_custom flag.
	revisionWithCustomSerialization = 54454
)

// ErrNativeEncode reports a row the Native encoder cannot write: not a canonical row of the
// columns it was made for, or a column type it cannot encode.
var ErrNativeEncode = errors.New("chformat: cannot encode Native")

// NativeEncoder writes rows given as canonical JSON arrays (chtype's canonical form) as blocks
// of ClickHouse's Native format, the columnar format clickhouse-go reads over HTTP. Rows are
// buffered until AppendBlock writes them as one block. A JSON column is written as a String
// column holding the object's text. It is not safe for concurrent use.
type NativeEncoder struct {
	names, types []string
	cols         []nativeColumn
	revision     uint64
	rows         int
	scan         chtype.ArrayScanner
}

// NewNativeEncoder returns an encoder for columns of these names and types, writing blocks as
// a server of protocol revision writes them for a client of that revision (0: no BlockInfo and
// no custom-serialization flags, as ClickHouse answers a client that names no revision).
func NewNativeEncoder(names []string, types []*chtype.Type, revision uint64) (*NativeEncoder, error) {
	if len(names) != len(types) {
		return nil, fmt.Errorf("%w: %d names for %d types", ErrNativeEncode, len(names), len(types))
	}
	e := &NativeEncoder{names: names, revision: revision}
	for i, t := range types {
		c, err := newNativeColumn(t)
		if err != nil {
			return nil, fmt.Errorf("%w: column %s: %w", ErrNativeEncode, names[i], err)
		}
		e.cols = append(e.cols, c)
		e.types = append(e.types, nativeTypeName(t))
	}
	return e, nil
}

// Rows returns the number of rows buffered since the last block.
func (e *NativeEncoder) Rows() int { return e.rows }

// Size approximates the bytes buffered since the last block.
func (e *NativeEncoder) Size() int {
	n := 0
	for _, c := range e.cols {
		n += c.size()
	}
	return n
}

// AppendRow buffers one canonical row. On error nothing of the row is kept.
func (e *NativeEncoder) AppendRow(row []byte) error {
	e.scan.Reset(row)
	i := 0
	for v, ok := e.scan.Next(); ok; v, ok = e.scan.Next() {
		if i >= len(e.cols) {
			break
		}
		if err := e.cols[i].add(v); err != nil {
			e.truncate(i)
			return fmt.Errorf("%w: column %s: %w", ErrNativeEncode, e.names[i], err)
		}
		i++
	}
	if !e.scan.Valid() || i != len(e.cols) || e.scan.Len() != len(e.cols) {
		e.truncate(i)
		return fmt.Errorf("%w: row is not a JSON array of %d values", ErrNativeEncode, len(e.cols))
	}
	e.rows++
	return nil
}

// truncate drops the value the first n columns received from the current row.
func (e *NativeEncoder) truncate(n int) {
	for _, c := range e.cols[:n] {
		c.truncate(e.rows)
	}
}

// AppendBlock appends the buffered rows as one block to dst (a block of no rows carries the
// column names and types only) and starts the next block.
func (e *NativeEncoder) AppendBlock(dst []byte) []byte {
	if e.revision >= revisionWithBlockInfo {
		// BlockInfo: field 1 is_overflows = false, field 2 bucket_num = -1, end.
		dst = append(dst, 1, 0, 2, 0xff, 0xff, 0xff, 0xff, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(e.cols)))
	dst = binary.AppendUvarint(dst, uint64(e.rows))
	for i, c := range e.cols {
		dst = appendString(dst, e.names[i])
		dst = appendString(dst, e.types[i])
		if e.revision >= revisionWithCustomSerialization {
			dst = append(dst, 0)
		}
		if e.rows > 0 {
			dst = c.appendPrefix(dst)
			dst = c.appendData(dst)
		}
		c.reset()
	}
	e.rows = 0
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// nativeTypeName is the type a column of t is declared with in a block: t's own, except that
// JSON travels as String.
func nativeTypeName(t *chtype.Type) string {
	if hasJSON(t) {
		return rewriteJSON(t)
	}
	return t.Name
}

func hasJSON(t *chtype.Type) bool {
	switch t.Kind {
	case chtype.JSON:
		return true
	case chtype.Nullable, chtype.LowCardinality, chtype.Array:
		return hasJSON(t.Elem)
	case chtype.Map:
		return hasJSON(t.Key) || hasJSON(t.Value)
	case chtype.Tuple:
		for _, f := range t.Fields {
			if hasJSON(f.Type) {
				return true
			}
		}
	}
	return false
}

// rewriteJSON spells t with every JSON replaced by String.
func rewriteJSON(t *chtype.Type) string {
	switch t.Kind {
	case chtype.JSON:
		return "String"
	case chtype.Nullable:
		return "Nullable(" + rewriteJSON(t.Elem) + ")"
	case chtype.LowCardinality:
		return "LowCardinality(" + rewriteJSON(t.Elem) + ")"
	case chtype.Array:
		return "Array(" + rewriteJSON(t.Elem) + ")"
	case chtype.Map:
		return "Map(" + rewriteJSON(t.Key) + ", " + rewriteJSON(t.Value) + ")"
	case chtype.Tuple:
		s := "Tuple("
		for i, f := range t.Fields {
			if i > 0 {
				s += ", "
			}
			if f.Name != "" {
				s += f.Name + " "
			}
			s += rewriteJSON(f.Type)
		}
		return s + ")"
	}
	return t.Name
}
