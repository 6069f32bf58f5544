package request

import (
	"bytes"
	"fmt"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/httpx"
)

// Problems of a header position, reported on every row as a JSON row with that key would be.
const (
	hdrOK uint8 = iota
	hdrUnknown
	hdrNotWritable
	hdrDuplicate
	hdrNotListed
)

// textState is the per-request scratch of CSV and TSV decoding; it lives in the pooled rows.
type textState struct {
	fields []textField
	// cols, bad and names describe each header position (or, without a header, each
	// insertable column in table order): the column index, its problem, the name as sent.
	cols  []int
	bad   []uint8
	names [][]byte
	// header is whether the body has a header record (for the field count message).
	header bool
	// conv holds the current row's values converted to JSON; offs their start,end (start -1
	// when the value is omitted).
	conv []byte
	offs []int
	buf  []byte
	lit  literal
}

func (t *textState) reset() {
	t.fields, t.cols, t.bad, t.offs = t.fields[:0], t.cols[:0], t.bad[:0], t.offs[:0]
	t.names = t.names[:0]
	t.conv, t.buf = t.conv[:0], t.buf[:0]
	t.header = false
}

// release drops references to the body before the rows return to their pool, and the scratch
// a huge field grew, so one request does not pin it.
func (t *textState) release() {
	clear(t.names[:cap(t.names)])
	t.reset()
	if cap(t.conv) > maxPooledBuffer {
		t.conv = nil
	}
	if cap(t.buf) > maxPooledBuffer {
		t.buf = nil
	}
	if cap(t.lit.buf) > maxPooledBuffer {
		t.lit.buf = nil
	}
}

// splitText walks a CSV or TSV body, handing each record to p, and returns the row count.
func (p *rows) splitText(f bodyFormat, b []byte, maxRows int) (int, *httpx.Error) {
	t := &p.text
	s := textScanner{b: b, sep: f.sep, tsv: f.kind == formatTSV, line: 1}
	if s.atEnd() {
		return 0, nil
	}
	if f.header != headerAbsent {
		var serr *syntaxError
		if t.fields, serr = s.record(t.fields[:0]); serr != nil {
			return 0, malformedText(f.kind, 0, 1, serr.off, serr.msg)
		}
		t.names = t.decodeFields(t.names[:0], b, s.tsv)
		if f.header == headerPresent || p.allColumns(t.names) {
			p.mapHeader()
			if f.types {
				if s.atEnd() {
					return 0, malformedHeader("the body ends before its types record")
				}
				if t.fields, serr = s.record(t.fields[:0]); serr != nil {
					return 0, malformedText(f.kind, 0, 2, serr.off, serr.msg)
				}
				if herr := p.checkTypes(t.decodeFields(nil, b, s.tsv)); herr != nil {
					return 0, herr
				}
			}
		} else {
			s.i, s.line = 0, 1
			p.mapTable()
		}
	} else {
		p.mapTable()
	}
	n := 0
	for !s.atEnd() {
		if n == maxRows {
			return 0, tooManyRows(maxRows)
		}
		line := s.line
		var serr *syntaxError
		if t.fields, serr = s.record(t.fields[:0]); serr != nil {
			return 0, malformedText(f.kind, n, line, serr.off, serr.msg)
		}
		p.textRow(n, line, b, s.tsv)
		n++
	}
	p.line = 0
	return n, nil
}

// decodeFields appends the decoded fields of the current record (a header) to dst.
func (t *textState) decodeFields(dst [][]byte, b []byte, tsv bool) [][]byte {
	for _, f := range t.fields {
		raw := b[f.start:f.end]
		switch {
		case !f.escaped:
		case tsv:
			raw = appendTSVUnescape(nil, raw)
		default:
			raw = appendCSVUnquote(nil, raw)
		}
		dst = append(dst, raw)
	}
	return dst
}

// allColumns reports whether every name is a column of the table: the header=auto rule.
func (p *rows) allColumns(names [][]byte) bool {
	p.hint = 0
	for _, n := range names {
		if p.lookup(n) < 0 {
			return false
		}
	}
	return true
}

// mapHeader resolves the header names to columns, once for the whole body.
func (p *rows) mapHeader() {
	t := &p.text
	t.header = true
	p.beginRow()
	for _, name := range t.names {
		c := p.lookup(name)
		st := hdrOK
		switch {
		case c < 0:
			st = hdrUnknown
		case !p.inList(c):
			st = hdrNotListed
		case !p.cols[c].writable:
			st = hdrNotWritable
		case p.stamp[c] == p.gen:
			st = hdrDuplicate
		default:
			p.stamp[c] = p.gen
		}
		t.cols, t.bad = append(t.cols, c), append(t.bad, st)
	}
}

// mapTable maps the fields of a body without a header to the INSERT's column list, or to the
// insertable columns in table order.
func (p *rows) mapTable() {
	t := &p.text
	if len(p.listed) > 0 {
		for _, c := range p.list {
			t.cols, t.bad = append(t.cols, c), append(t.bad, hdrOK)
		}
		return
	}
	for c := range p.cols {
		if p.cols[c].writable {
			t.cols, t.bad = append(t.cols, c), append(t.bad, hdrOK)
		}
	}
}

// textRow validates the current record as row number row, starting on body line line.
func (p *rows) textRow(row, line int, b []byte, tsv bool) {
	t := &p.text
	p.beginRow()
	p.line = line
	if len(t.fields) != len(t.cols) {
		p.fail(row, RowFieldCount, func() (string, string) {
			if t.header {
				return "", fmt.Sprintf("the row has %d fields, the header has %d", len(t.fields), len(t.cols))
			}
			return "", fmt.Sprintf("the row has %d fields, the table has %d insertable columns (send a header to give fewer)", len(t.fields), len(t.cols))
		})
		p.rejected++
		return
	}
	t.conv = t.conv[:0]
	t.offs = resize(t.offs, 2*len(t.fields))
	for k, f := range t.fields {
		t.offs[2*k] = -1
		c := t.cols[k]
		switch t.bad[k] {
		case hdrUnknown:
			p.unknownColumn(row, t.names[k])
			continue
		case hdrNotWritable:
			p.notWritable(row, &p.cols[c])
			continue
		case hdrDuplicate:
			p.duplicateColumn(row, &p.cols[c])
			continue
		case hdrNotListed:
			p.notListed(row, &p.cols[c])
			continue
		}
		col := &p.cols[c]
		start := len(t.conv)
		out, st := t.appendValue(t.conv, col, b[f.start:f.end], f, tsv)
		t.conv = out
		switch st {
		case valueOmitted:
			continue
		case valueMalformed:
			p.fail(row, string(chtype.CodeInvalidValue), func() (string, string) {
				return col.name, fmt.Sprintf("column %q (%s): malformed value %s (arrays are written [1,2] or ['a','b'], tuples (1,'a'), maps {'k':1})",
					col.name, col.typ.Name, excerptBytes(b[f.start:f.end], 40))
			})
			p.vals[c] = nil
		default:
			t.offs[2*k], t.offs[2*k+1] = start, len(t.conv)
		}
		p.stamp[c] = p.gen
	}
	for k := range t.fields {
		if s := t.offs[2*k]; s >= 0 {
			p.vals[t.cols[k]] = t.conv[s:t.offs[2*k+1]]
		}
	}
	p.finishRow(row)
}

// What appendValue made of a field.
const (
	valueGiven = iota
	valueOmitted
	valueMalformed
)

// nullText is how CSV and TSV spell NULL.
var nullText = []byte(`\N`)

// appendValue appends the JSON form of one field for col. raw is the field's bytes in the body.
// It follows ClickHouse: \N is NULL (unquoted, in CSV); an empty unquoted CSV field is the
// column's default when it has one or is Nullable (input_format_csv_empty_as_default); Array,
// Tuple and Map columns take a text literal; everything else is its text, which numbers, booleans
// and enum ids pass as JSON tokens and every other type as a JSON string.
func (t *textState) appendValue(dst []byte, col *column, raw []byte, f textField, tsv bool) ([]byte, int) {
	if tsv && f.escaped || !tsv && !f.quoted {
		if bytes.Equal(raw, nullText) {
			return append(dst, "null"...), valueGiven
		}
	}
	if !tsv && !f.quoted && len(raw) == 0 && (col.hasDefault || col.nullable) {
		return dst, valueOmitted
	}
	base := col.typ
	for (base.Kind == chtype.Nullable || base.Kind == chtype.LowCardinality) && base.Elem != nil {
		base = base.Elem
	}
	text := raw
	if f.escaped && (!tsv || !isComposite(base.Kind)) {
		// TSV writes a composite's text literal with its own escapes, undecoded.
		if tsv {
			t.buf = appendTSVUnescape(t.buf[:0], raw)
		} else {
			t.buf = appendCSVUnquote(t.buf[:0], raw)
		}
		text = t.buf
	}
	switch base.Kind {
	case chtype.Array, chtype.Tuple, chtype.Map:
		out, ok := t.lit.appendLiteral(dst, text)
		if !ok {
			return dst, valueMalformed
		}
		return out, valueGiven
	case chtype.Int8, chtype.Int16, chtype.Int32, chtype.Int64, chtype.Int128, chtype.Int256,
		chtype.UInt8, chtype.UInt16, chtype.UInt32, chtype.UInt64, chtype.UInt128, chtype.UInt256,
		chtype.Float32, chtype.Float64, chtype.Decimal:
		if n, ok := numberText(text); ok {
			return append(dst, n...), valueGiven
		}
	case chtype.Bool:
		switch {
		case bytes.EqualFold(text, []byte("true")), string(text) == "1":
			return append(dst, "true"...), valueGiven
		case bytes.EqualFold(text, []byte("false")), string(text) == "0":
			return append(dst, "false"...), valueGiven
		}
	case chtype.Enum8, chtype.Enum16:
		// A name first, then an id, as ClickHouse reads enums in text formats.
		if !enumName(base, text) && chtype.IsNumber(text) {
			return append(dst, text...), valueGiven
		}
	case chtype.JSON:
		if len(text) > 0 {
			return append(dst, text...), valueGiven
		}
	}
	return chtype.AppendString(dst, text), valueGiven
}

func isComposite(k chtype.Kind) bool {
	return k == chtype.Array || k == chtype.Tuple || k == chtype.Map
}

func enumName(t *chtype.Type, s []byte) bool {
	for _, e := range t.Enum {
		if e.Name == string(s) {
			return true
		}
	}
	return false
}
