// Package payload is the encoding of validated rows inside a queue record: what the api role
// publishes and the ingest role inserts (ADR 0013).
//
// A payload is one or more segments; each names its columns (in table order) and holds rows
// giving exactly those columns. Rows of one request that omit different DEFAULT columns land
// in different segments, because an insert names one column list for all its rows and an
// omitted DEFAULT column must stay omitted for the server to compute it.
//
// The first byte is the format version. Version 2, written today, is binary:
//
//	0x02
//	segment*: uvarint ncols, ncols × (uvarint len, name, uvarint len, type),
//	          uvarint nrows, uvarint nbytes, nbytes of RowBinary rows
//
// The rows are ClickHouse RowBinary in the listed columns and types, so an insert sends them as
// they are. Version 1, written by earlier releases, is line-oriented canonical JSON; it is
// still decoded so a backlog queued by an earlier release inserts after an upgrade:
//
//	{"v":1,"columns":["ts","user","n"]}
//	["2026-01-01 00:00:00","ann",1]
package payload

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// Version is the payload format version Encode writes.
const Version = 2

// Version1 is the canonical-JSON format of earlier releases, decoded but no longer written.
const Version1 = 1

// ErrMalformed reports a payload that cannot be decoded.
var ErrMalformed = errors.New("payload: malformed")

// Segment is rows sharing one column list.
type Segment struct {
	Columns []string
	// Types are the ClickHouse types of Columns the rows were validated and encoded against;
	// set for binary (version 2) segments only.
	Types []string
	// Data holds Count RowBinary rows (version 2).
	Data  []byte
	Count int
	// Rows are canonical JSON rows, one JSON array each (version 1 only).
	Rows [][]byte
}

// Binary reports whether s carries RowBinary rows (version 2) rather than canonical JSON.
func (s Segment) Binary() bool { return s.Types != nil }

// Len is the number of rows of s.
func (s Segment) Len() int {
	if s.Binary() {
		return s.Count
	}
	return len(s.Rows)
}

// Key identifies the encoding and column list, so segments of many records can be merged into
// one insert: binary segments merge only with binary segments of the same column types.
func (s Segment) Key() string {
	if !s.Binary() {
		return strings.Join(s.Columns, "\x00")
	}
	return "\x02" + strings.Join(s.Columns, "\x00") + "\x01" + strings.Join(s.Types, "\x00")
}

// Encode returns the version 2 payload of segs. Empty segments are skipped; every segment must
// be binary.
func Encode(segs []Segment) ([]byte, error) {
	size := 1
	for _, s := range segs {
		text := 0
		for i, c := range s.Columns {
			text += len(c)
			if i < len(s.Types) {
				text += len(s.Types[i])
			}
		}
		size += len(s.Data) + HeaderBound(len(s.Columns), text)
	}
	out := make([]byte, 1, size)
	out[0] = Version
	for i, s := range segs {
		if s.Len() == 0 {
			continue
		}
		var err error
		if out, err = appendHeader(out, i, s); err != nil {
			return nil, err
		}
		out = append(out, s.Data...)
	}
	return out, nil
}

// HeaderBound bounds the bytes a segment of ncols columns puts before its rows, the version
// byte included, when its column names and type names total text bytes.
func HeaderBound(ncols, text int) int {
	return 1 + 3*binary.MaxVarintLen64 + ncols*2*binary.MaxVarintLen64 + text
}

// EncodeInPlace returns the version 2 payload of the one segment s, whose Data is
// buf[start:start+len(s.Data)], by writing the version byte and the segment's header into
// buf[:start] right before the rows, so the rows are not copied. ok is false, and buf
// untouched, when the header needs more than start bytes; Encode then does the job.
func EncodeInPlace(buf []byte, start int, s Segment) (out []byte, ok bool, err error) {
	var scratch [256]byte
	hdr, err := appendHeader(append(scratch[:0], Version), 0, s)
	if err != nil || len(hdr) > start {
		return nil, false, err
	}
	end := start + len(s.Data)
	if len(s.Data) == 0 || end > len(buf) || &buf[start] != &s.Data[0] {
		return nil, false, fmt.Errorf("payload: segment rows are not buf[%d:%d]", start, end)
	}
	copy(buf[start-len(hdr):start], hdr)
	return buf[start-len(hdr) : end : end], true, nil
}

// appendHeader appends segment i's header: its columns and types, row count and byte count.
func appendHeader(out []byte, i int, s Segment) ([]byte, error) {
	if !s.Binary() || len(s.Types) != len(s.Columns) || len(s.Columns) == 0 {
		return nil, fmt.Errorf("payload: segment %d is not binary rows with one type per column", i)
	}
	out = binary.AppendUvarint(out, uint64(len(s.Columns)))
	for c, name := range s.Columns {
		out = appendString(out, name)
		out = appendString(out, s.Types[c])
	}
	out = binary.AppendUvarint(out, uint64(s.Count))
	return binary.AppendUvarint(out, uint64(len(s.Data))), nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// Decode parses a payload of either version. Row data alias b.
func Decode(b []byte) ([]Segment, error) {
	if len(b) == 0 {
		return nil, nil
	}
	switch b[0] {
	case Version:
		return decodeV2(b[1:], nil)
	case '{', '\n':
		return decodeV1(b)
	}
	return nil, fmt.Errorf("%w: unknown format version byte 0x%02x", ErrMalformed, b[0])
}

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.err = fmt.Errorf("%w: %s at byte %d is truncated", ErrMalformed, what, r.off+1)
		return 0
	}
	r.off += n
	return v
}

func (r *reader) bytes(n uint64, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.off) {
		r.err = fmt.Errorf("%w: %s at byte %d runs past the end", ErrMalformed, what, r.off+1)
		return nil
	}
	s := r.b[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return s
}

// decodeV2 decodes the segments after the version byte. With d, a segment whose header (its
// column names and types) is byte for byte the last one d decoded shares that one's Columns
// and Types, and the segments are returned in d's buffer.
func decodeV2(b []byte, d *Decoder) ([]Segment, error) {
	r := &reader{b: b}
	var segs []Segment
	if d != nil {
		segs = d.segs[:0]
	}
	for r.err == nil && r.off < len(b) {
		start := r.off
		n := r.uvarint("column count")
		if r.err == nil && (n == 0 || n > uint64(len(b))) {
			return nil, fmt.Errorf("%w: segment %d names %d columns", ErrMalformed, len(segs), n)
		}
		var s Segment
		if d != nil {
			s = d.shared(r, start, n)
		} else {
			s = readHeader(r, n)
		}
		count := r.uvarint("row count")
		s.Data = r.bytes(r.uvarint("data length"), "rows")
		if r.err != nil {
			return nil, r.err
		}
		if count == 0 || count > uint64(len(s.Data)) {
			return nil, fmt.Errorf("%w: segment %d has %d rows in %d bytes", ErrMalformed, len(segs), count, len(s.Data))
		}
		s.Count = int(count)
		segs = append(segs, s)
	}
	if r.err != nil {
		return nil, r.err
	}
	if d != nil {
		d.segs = segs
	}
	return segs, nil
}

// rowsV2 adds up the row counts of the segments after the version byte, skipping their headers
// and rows without decoding them (the writer counts every record it acknowledges), up to the
// first malformed segment.
func rowsV2(b []byte) int {
	r := &reader{b: b}
	total := 0
	for r.err == nil && r.off < len(b) {
		n := r.uvarint("column count")
		skipHeader(r, n)
		count := r.uvarint("row count")
		data := r.bytes(r.uvarint("data length"), "rows")
		if r.err != nil || n == 0 || count == 0 || count > uint64(len(data)) {
			break
		}
		total += int(count)
	}
	return total
}

// skipHeader reads past a segment's n column names and types.
func skipHeader(r *reader, n uint64) {
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.bytes(r.uvarint("name length"), "column name")
		r.bytes(r.uvarint("type length"), "column type")
	}
}

// readHeader reads a segment's n column names and types.
func readHeader(r *reader, n uint64) Segment {
	s := Segment{Columns: make([]string, 0, n), Types: make([]string, 0, n)}
	for i := uint64(0); i < n && r.err == nil; i++ {
		s.Columns = append(s.Columns, string(r.bytes(r.uvarint("name length"), "column name")))
		s.Types = append(s.Types, string(r.bytes(r.uvarint("type length"), "column type")))
	}
	return s
}

type header struct {
	V       int      `json:"v"`
	Columns []string `json:"columns"`
}

// decodeV1 parses the canonical-JSON payload of earlier releases.
func decodeV1(b []byte) ([]Segment, error) {
	var segs []Segment
	line := 0
	for len(b) > 0 {
		line++
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("%w: line %d is not terminated", ErrMalformed, line)
		}
		l := b[:nl]
		b = b[nl+1:]
		switch {
		case len(l) > 0 && l[0] == '{':
			var h header
			if err := json.Unmarshal(l, &h); err != nil {
				return nil, fmt.Errorf("%w: line %d: header: %v", ErrMalformed, line, err)
			}
			if h.V != Version1 {
				return nil, fmt.Errorf("%w: line %d: version %d, want %d", ErrMalformed, line, h.V, Version1)
			}
			if len(h.Columns) == 0 {
				return nil, fmt.Errorf("%w: line %d: header names no columns", ErrMalformed, line)
			}
			segs = append(segs, Segment{Columns: h.Columns})
		case len(l) > 0 && l[0] == '[':
			if len(segs) == 0 {
				return nil, fmt.Errorf("%w: line %d: row before any header", ErrMalformed, line)
			}
			s := &segs[len(segs)-1]
			s.Rows = append(s.Rows, l)
		default:
			return nil, fmt.Errorf("%w: line %d: neither a header nor a row", ErrMalformed, line)
		}
	}
	return segs, nil
}

// Rows counts the rows of a payload of either version without decoding them; a malformed
// payload counts what precedes the fault.
func Rows(b []byte) int {
	if len(b) > 0 && b[0] == Version {
		return rowsV2(b[1:])
	}
	n := 0
	for len(b) > 0 {
		if b[0] == '[' {
			n++
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		b = b[i+1:]
	}
	return n
}

// Canonical returns the rows of s as canonical JSON values, one slice of len(Columns) values
// per row: version 1 rows are split, binary rows are read with their column types. Data that
// does not match the columns is ErrMalformed naming the row and column.
func (s Segment) Canonical() ([][]json.RawMessage, error) {
	out := make([][]json.RawMessage, 0, s.Len())
	if !s.Binary() {
		for i, raw := range s.Rows {
			var vals []json.RawMessage
			if err := json.Unmarshal(raw, &vals); err != nil || len(vals) != len(s.Columns) {
				return nil, fmt.Errorf("%w: row %d does not match its column header", ErrMalformed, i)
			}
			out = append(out, vals)
		}
		return out, nil
	}
	types, err := s.parseTypes()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 0, len(s.Data)*2)
	data := s.Data
	for i := 0; i < s.Count; i++ {
		vals := make([]json.RawMessage, len(types))
		for c, t := range types {
			start := len(buf)
			var n int
			if buf, n, err = t.AppendCanonicalRowBinary(buf, data); err != nil {
				return nil, fmt.Errorf("%w: row %d column %s (%s): %v", ErrMalformed, i, s.Columns[c], t.Name, err)
			}
			data = data[n:]
			vals[c] = buf[start:len(buf):len(buf)]
		}
		out = append(out, vals)
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last of %d rows", ErrMalformed, len(data), s.Count)
	}
	return out, nil
}

func (s Segment) parseTypes() ([]*chtype.Type, error) {
	types := make([]*chtype.Type, len(s.Types))
	for i, name := range s.Types {
		t, err := chtype.Parse(name)
		if err != nil || !t.RowBinarySupported() {
			return nil, fmt.Errorf("%w: column %s has type %q that cannot be read", ErrMalformed, s.Columns[i], name)
		}
		types[i] = t
	}
	return types, nil
}

// CanonicalRows returns the rows of s as canonical JSON arrays, the version 1 row form.
func (s Segment) CanonicalRows() ([][]byte, error) {
	if !s.Binary() {
		return s.Rows, nil
	}
	vals, err := s.Canonical()
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(vals))
	for i, row := range vals {
		b := []byte{'['}
		for c, v := range row {
			if c > 0 {
				b = append(b, ',')
			}
			b = append(b, v...)
		}
		out[i] = append(b, ']')
	}
	return out, nil
}
