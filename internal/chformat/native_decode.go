package chformat

import (
	"fmt"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// Revision is the native protocol revision WaveHouse claims to ClickHouse clients: what its
// answer to a client's connect query gives as revision(). It is 54460, clickhouse-go v2.51.0's
// own DBMS_TCP_PROTOCOL_VERSION: that client decodes its connect query's answer at 54460 before
// it knows the server's revision, and every later answer at the revision claimed, so claiming
// the same one means the gateway writes one Native form (BlockInfo, then a custom
// serialization flag per column, both present from 54454 on) and the client needs nothing the
// gateway does not write.
//
// Native INSERT bodies are not written at this revision: ClickHouse's Native input format reads
// at revision 0 whatever client_protocol_version says, and clickhouse-go encodes HTTP inserts
// at revision 0, so the ingest path calls DecodeNative(body, 0, dst).
const Revision uint64 = 54460

const (
	// minRevisionCustomSerialization is DBMS_MIN_REVISION_WITH_CUSTOM_SERIALIZATION: from it
	// on, every column's type is followed by a has-custom-serialization byte.
	minRevisionCustomSerialization = 54454
	// maxBlockRows refuses absurd row counts before anything is sized by them (clickhouse-go's
	// own bound).
	maxBlockRows = 1_000_000_000
)

// maxExpansion is how many bytes of canonical JSON LowCardinality indexes may produce beyond
// their own size: every other Native value decodes to a few times its bytes at most, but an
// index of one byte can repeat a key of any length.
func maxExpansion(n int) int { return 64<<20 + 16*n }

// DecodeNative converts a Native body — blocks until the end of src — to canonical JSON rows
// appended to dst. revision is the protocol revision the body was written for: 0 for plain
// Native (what ClickHouse reads and writes over HTTP without client_protocol_version, and what
// clickhouse-go sends as an INSERT body), or a client revision such as Revision, with which each
// block starts with its BlockInfo and, from 54454 on, each column's type is followed by its
// custom serialization flag (which must be 0: sparse columns are refused).
//
// Each block is a uvarint column count, a uvarint row count, then per column its name, its type
// string and its data (nothing when the block has no rows). Every block must have the first
// block's columns; Decoded.Names and Types are the first block's. Column data is converted to
// rows: Nullable as its null map then the values, Array and Map as offsets then the flattened
// elements, Tuple as one column per element, LowCardinality as its dictionary serialization
// (a keys version prefix, then chunks of additional keys and indexes). A column whose type the
// decoder cannot read is an error wrapping ErrUnsupportedType naming column and type; bad column
// data is a *RowError naming the column and the first row it could be pinned to. On error the
// returned JSON is dst at its original length.
func DecodeNative(src []byte, revision uint64, dst []byte) (Decoded, error) {
	return DecodeNativeFor(src, revision, nil, nil, dst)
}

// DecodeNativeFor is DecodeNative for a body meant for known columns (the table's, or the
// INSERT's column list): every block column must be one of names, with its type or one that
// differs only in DateTime time zones, else the error wraps ErrHeaderMismatch and names the
// column. A column is read with its expected type: ClickHouse writes Native at revision 0 with
// the zones of DateTime types dropped ("DateTime" for DateTime('Asia/Tokyo')), and the values,
// instants, are then canonical in the table's zone rather than as UTC wall-clock text the
// table's type would misread. Decoded.Types are the types read with. With no names it is
// DecodeNative.
func DecodeNativeFor(src []byte, revision uint64, names, types []string, dst []byte) (Decoded, error) {
	start := len(dst)
	fail := func(err error) (Decoded, error) { return Decoded{JSON: dst[:start]}, err }
	if len(names) != len(types) {
		return fail(fmt.Errorf("%w: %d column names for %d types", ErrHeaderMismatch, len(names), len(types)))
	}
	want := newExpected(names, types)
	r := &reader{b: src, expand: maxExpansion(len(src))}
	var d Decoded
	for block := 0; r.rest() > 0; block++ {
		b, err := readBlock(r, revision, want, d.Rows, block)
		if err != nil {
			return fail(err)
		}
		if block == 0 {
			d.Names, d.Types = b.names, b.types
		} else if err := sameColumns(d, b, block); err != nil {
			return fail(err)
		}
		dst = b.appendRows(dst)
		d.Rows += b.rows
	}
	d.JSON = dst
	return d, nil
}

// block is one decoded Native block: every column's values as canonical JSON.
type block struct {
	names, types []string
	rows         int
	cols         []values
}

func (b *block) appendRows(dst []byte) []byte {
	for i := 0; i < b.rows; i++ {
		dst = append(dst, '[')
		for c := range b.cols {
			if c > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, b.cols[c].at(i)...)
		}
		dst = append(dst, ']', '\n')
	}
	return dst
}

func sameColumns(d Decoded, b *block, n int) error {
	if len(b.names) != len(d.Names) {
		return &RowError{Row: d.Rows, Err: fmt.Errorf("%w: block %d has %d columns, the first block %d", ErrMalformed, n, len(b.names), len(d.Names))}
	}
	for i := range b.names {
		if b.names[i] != d.Names[i] || !sameType(b.types[i], d.Types[i]) {
			return &RowError{Row: d.Rows, Column: b.names[i], Err: fmt.Errorf("%w: block %d has column %d %q %s, the first block %q %s", ErrMalformed, n, i, b.names[i], b.types[i], d.Names[i], d.Types[i])}
		}
	}
	return nil
}

// readBlock reads one block; firstRow is the index of its first row in the whole body.
func readBlock(r *reader, revision uint64, want *expected, firstRow, n int) (*block, error) {
	bad := func(column, format string, args ...any) error {
		return &RowError{Row: firstRow, Column: column, Err: fmt.Errorf("%w: block %d: "+format, append([]any{ErrMalformed, n}, args...)...)}
	}
	if revision > 0 {
		if err := skipBlockInfo(r); err != nil {
			return nil, bad("", "%v", err)
		}
	}
	ncols, ok1 := r.uvarint()
	nrows, ok2 := r.uvarint()
	switch {
	case !ok1 || !ok2:
		return nil, bad("", "header ends early")
	case ncols > uint64(r.rest()): // each column takes at least its name's and type's lengths
		return nil, bad("", "%d columns in %d bytes", ncols, r.rest())
	case nrows > maxBlockRows:
		return nil, bad("", "%d rows", nrows)
	case ncols == 0 && nrows > 0:
		return nil, bad("", "%d rows without columns", nrows)
	}
	b := &block{
		names: make([]string, ncols), types: make([]string, ncols),
		rows: int(nrows), cols: make([]values, ncols),
	}
	for c := range b.cols {
		name, ok1 := r.str()
		typ, ok2 := r.str()
		if !ok1 || !ok2 {
			return nil, bad(name, "ends inside the name or type of column %d", c)
		}
		if want != nil {
			var err error
			if typ, err = want.conform(name, typ, true); err != nil {
				return nil, err
			}
		}
		for _, prev := range b.names[:c] {
			if prev == name {
				return nil, bad(name, "column %q appears twice", name)
			}
		}
		b.names[c], b.types[c] = name, typ
		t, err := chtype.Parse(typ)
		if err != nil {
			return nil, bad(name, "%v", err)
		}
		if !nativeSupported(t) {
			return nil, fmt.Errorf("%w: column %q has type %s, which Native input does not support", ErrUnsupportedType, name, typ)
		}
		if revision >= minRevisionCustomSerialization {
			flag, ok := r.take(1)
			switch {
			case !ok:
				return nil, bad(name, "ends before the serialization flag")
			case flag[0] != 0:
				return nil, fmt.Errorf("%w: column %q uses a custom (sparse) serialization", ErrUnsupportedType, name)
			}
		}
		if nrows == 0 {
			// Zero rows are zero bytes of data, state prefixes included.
			continue
		}
		if err := readPrefix(r, t); err != nil {
			return nil, &RowError{Row: firstRow, Column: name, Err: err}
		}
		v, err := readColumn(r, t, b.rows)
		if err != nil {
			row := firstRow
			if ve, ok := err.(*valueError); ok {
				row, err = firstRow+ve.index, ve.err
			}
			return nil, &RowError{Row: row, Column: name, Err: err}
		}
		b.cols[c] = v
	}
	return b, nil
}

// skipBlockInfo reads BlockInfo: numbered fields (1: is_overflows byte, 2: bucket_num Int32)
// ended by field 0.
func skipBlockInfo(r *reader) error {
	for {
		field, ok := r.uvarint()
		if !ok {
			return fmt.Errorf("BlockInfo ends early")
		}
		var width uint64
		switch field {
		case 0:
			return nil
		case 1:
			width = 1
		case 2:
			width = 4
		default:
			return fmt.Errorf("unknown BlockInfo field %d", field)
		}
		if _, ok := r.take(width); !ok {
			return fmt.Errorf("BlockInfo ends early")
		}
	}
}
