package query

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"

	"github.com/wavehouse/wavehouse/internal/chformat"
	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
)

// Native blocks are cut at this many rows or bytes, whichever comes first (ClickHouse's
// max_block_size is 65409 rows).
const (
	nativeBlockRows  = 65409
	nativeBlockBytes = 1 << 20
)

// chEncoder writes rows in a ClickHouse output format, byte for byte as a ClickHouse server
// with default settings writes them (see docs/clickhouse.md#reads for the differences).
type chEncoder struct {
	f      chFormat
	w      io.Writer
	cols   []store.ResultColumn
	types  []*chtype.Type
	jnames [][]byte // JSON-quoted column names
	n      uint64
	buf    []byte
	vals   [][]byte
	native *chformat.NativeEncoder
	scan   chtype.ArrayScanner
}

func newCHEncoder(f chFormat, w io.Writer, cols []store.ResultColumn) *chEncoder {
	e := &chEncoder{f: f, w: w, cols: cols}
	for _, c := range cols {
		t := c.Type
		if t == nil {
			t, _ = chtype.Parse(c.TypeName)
		}
		if t == nil {
			t = &chtype.Type{Kind: chtype.Unsupported, Name: c.TypeName}
		}
		e.types = append(e.types, t)
		e.jnames = append(e.jnames, appendJSONString(nil, []byte(c.Name)))
	}
	return e
}

func (e *chEncoder) jsonOpts() jsonOpts { return jsonOpts{quote64: e.f.quote64} }

func (e *chEncoder) begin() error {
	b := e.buf[:0]
	switch e.f.kind {
	case chTSVWithNames, chTSVWithNamesAndTypes:
		b = e.appendNames(b, '\t', func(b []byte, s string) []byte { return appendEscaped(b, []byte(s)) })
		if e.f.kind == chTSVWithNamesAndTypes {
			b = e.appendTypes(b, '\t', func(b []byte, s string) []byte { return appendEscaped(b, []byte(s)) })
		}
	case chCSVWithNames, chCSVWithNamesAndTypes:
		b = e.appendNames(b, ',', func(b []byte, s string) []byte { return appendCSVQuoted(b, []byte(s)) })
		if e.f.kind == chCSVWithNamesAndTypes {
			b = e.appendTypes(b, ',', func(b []byte, s string) []byte { return appendCSVQuoted(b, []byte(s)) })
		}
	case chJSONCompactEachRowWithNames, chJSONCompactEachRowWithNamesAndTypes:
		b = append(b, '[')
		for i := range e.cols {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = append(b, e.jnames[i]...)
		}
		b = append(b, "]\n"...)
		if e.f.kind == chJSONCompactEachRowWithNamesAndTypes {
			b = append(b, '[')
			for i, c := range e.cols {
				if i > 0 {
					b = append(b, ", "...)
				}
				b = appendJSONString(b, []byte(c.TypeName))
			}
			b = append(b, "]\n"...)
		}
	case chJSON, chJSONCompact:
		b = append(b, "{\n\t\"meta\":\n\t[\n"...)
		for i, c := range e.cols {
			if i > 0 {
				b = append(b, ",\n"...)
			}
			b = append(b, "\t\t{\n\t\t\t\"name\": "...)
			b = append(b, e.jnames[i]...)
			b = append(b, ",\n\t\t\t\"type\": "...)
			b = appendJSONString(b, []byte(c.TypeName))
			b = append(b, "\n\t\t}"...)
		}
		b = append(b, "\n\t],\n\n\t\"data\":\n\t[\n"...)
	case chRowBinaryWithNames, chRowBinaryWithNamesAndTypes:
		b = binary.AppendUvarint(b, uint64(len(e.cols)))
		for _, c := range e.cols {
			b = binary.AppendUvarint(b, uint64(len(c.Name)))
			b = append(b, c.Name...)
		}
		if e.f.kind == chRowBinaryWithNamesAndTypes {
			for _, c := range e.cols {
				b = binary.AppendUvarint(b, uint64(len(c.TypeName)))
				b = append(b, c.TypeName...)
			}
		}
	case chNative:
		names := make([]string, len(e.cols))
		for i, c := range e.cols {
			names[i] = c.Name
		}
		enc, err := chformat.NewNativeEncoder(names, e.types, e.f.revision)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrRejected, err)
		}
		e.native = enc
		return nil
	default:
		return nil
	}
	e.buf = b
	_, err := e.w.Write(b)
	return err
}

func (e *chEncoder) appendNames(b []byte, sep byte, quote func([]byte, string) []byte) []byte {
	for i, c := range e.cols {
		if i > 0 {
			b = append(b, sep)
		}
		b = quote(b, c.Name)
	}
	return append(b, '\n')
}

func (e *chEncoder) appendTypes(b []byte, sep byte, quote func([]byte, string) []byte) []byte {
	for i, c := range e.cols {
		if i > 0 {
			b = append(b, sep)
		}
		b = quote(b, c.TypeName)
	}
	return append(b, '\n')
}

// split cuts the canonical row into its values.
func (e *chEncoder) split(row []byte) error {
	e.vals = e.vals[:0]
	e.scan.Reset(row)
	for v, ok := e.scan.Next(); ok; v, ok = e.scan.Next() {
		e.vals = append(e.vals, v)
	}
	if !e.scan.Valid() || len(e.vals) != len(e.cols) {
		return fmt.Errorf("query: malformed result row")
	}
	return nil
}

func (e *chEncoder) row(canonical []byte) error {
	if e.f.kind == chNative {
		if err := e.native.AppendRow(canonical); err != nil {
			return err
		}
		e.n++
		if e.native.Rows() >= nativeBlockRows || e.native.Size() >= nativeBlockBytes {
			return e.flushNative()
		}
		return nil
	}
	if err := e.split(canonical); err != nil {
		return err
	}
	b := e.buf[:0]
	var err error
	switch e.f.kind {
	case chTSV, chTSVWithNames, chTSVWithNamesAndTypes, chCSV, chCSVWithNames, chCSVWithNamesAndTypes:
		sep, st := byte('\t'), styleEscaped
		if e.f.kind == chCSV || e.f.kind == chCSVWithNames || e.f.kind == chCSVWithNamesAndTypes {
			sep, st = ',', styleCSV
		}
		for i, v := range e.vals {
			if i > 0 {
				b = append(b, sep)
			}
			if b, err = appendText(b, e.types[i], v, st); err != nil {
				return err
			}
		}
		b = append(b, '\n')
	case chJSONEachRow:
		b = append(b, '{')
		for i, v := range e.vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, e.jnames[i]...)
			b = append(b, ':')
			if b, err = appendJSON(b, e.types[i], v, e.jsonOpts(), 0); err != nil {
				return err
			}
		}
		b = append(b, "}\n"...)
	case chJSONCompactEachRow, chJSONCompactEachRowWithNames, chJSONCompactEachRowWithNamesAndTypes:
		b = append(b, '[')
		for i, v := range e.vals {
			if i > 0 {
				b = append(b, ", "...)
			}
			if b, err = appendJSON(b, e.types[i], v, e.jsonOpts(), 0); err != nil {
				return err
			}
		}
		b = append(b, "]\n"...)
	case chJSON:
		if e.n > 0 {
			b = append(b, ",\n"...)
		}
		b = append(b, "\t\t{"...)
		o := e.jsonOpts()
		o.pretty = true
		for i, v := range e.vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n\t\t\t"...)
			b = append(b, e.jnames[i]...)
			b = append(b, ": "...)
			if b, err = appendJSON(b, e.types[i], v, o, 3); err != nil {
				return err
			}
		}
		b = append(b, "\n\t\t}"...)
	case chJSONCompact:
		if e.n > 0 {
			b = append(b, ",\n"...)
		}
		b = append(b, "\t\t["...)
		for i, v := range e.vals {
			if i > 0 {
				b = append(b, ", "...)
			}
			if b, err = appendJSON(b, e.types[i], v, e.jsonOpts(), 0); err != nil {
				return err
			}
		}
		b = append(b, ']')
	case chRowBinary, chRowBinaryWithNames, chRowBinaryWithNamesAndTypes:
		for i, v := range e.vals {
			if b, err = e.types[i].AppendRowBinary(b, v); err != nil {
				return fmt.Errorf("query: column %s: %w", e.cols[i].Name, err)
			}
		}
	}
	e.buf = b
	e.n++
	_, err = e.w.Write(b)
	return err
}

func (e *chEncoder) flushNative() error {
	e.buf = e.native.AppendBlock(e.buf[:0])
	_, err := e.w.Write(e.buf)
	return err
}

// end finishes the output; failure, when not nil, is reported inside it the way ClickHouse
// reports an error after the status line was sent.
func (e *chEncoder) end(st store.Stats, failure error) error {
	switch e.f.kind {
	case chNative:
		if e.native != nil && (e.native.Rows() > 0 || e.n == 0) {
			if err := e.flushNative(); err != nil {
				return err
			}
		}
		if failure != nil {
			// An error in a Native stream as ClickHouse 25.8 writes it, a marker and the
			// text, which clickhouse-go finds by the marker and the "Code: N." after it.
			b := append(e.buf[:0], "\r\n__exception__\r\n"...)
			b = appendCHException(b, failure)
			_, _ = e.w.Write(b)
		}
		return nil
	case chJSON, chJSONCompact:
		b := append(e.buf[:0], "\n\t],\n\n\t\"rows\": "...)
		b = strconv.AppendUint(b, e.n, 10)
		if failure != nil {
			b = append(b, ",\n\n\t\"exception\": "...)
			b = appendJSONString(b, appendCHException(nil, failure))
		} else {
			b = append(b, ",\n\n\t\"statistics\":\n\t{\n\t\t\"elapsed\": "...)
			b = strconv.AppendFloat(b, st.Elapsed.Seconds(), 'f', -1, 64)
			b = append(b, ",\n\t\t\"rows_read\": "...)
			b = strconv.AppendUint(b, st.RowsRead, 10)
			b = append(b, ",\n\t\t\"bytes_read\": "...)
			b = strconv.AppendUint(b, st.BytesRead, 10)
			b = append(b, "\n\t}"...)
		}
		b = append(b, "\n}\n"...)
		_, err := e.w.Write(b)
		return err
	}
	if failure != nil {
		b := append(e.buf[:0], '\n')
		b = appendCHException(b, failure)
		_, _ = e.w.Write(b)
	}
	return nil
}
