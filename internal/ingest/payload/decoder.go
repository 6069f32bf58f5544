package payload

import (
	"bytes"
)

// Decoder decodes payloads one after another for a reader of many records, such as the
// writer's flush: consecutive segments with the same header (column names and types) share
// one Columns and one Types slice, and Key builds their key once. A batch of twenty thousand
// single-row records of one table thus decodes its header once instead of twenty thousand times
// (BenchmarkDecodeSingleRowBatch in internal/ingest/writer; docs/benchmarks.md). The zero
// value is ready to use; a Decoder is not safe for concurrent use.
type Decoder struct {
	// header is a copy of the last version 2 segment header decoded, last its segment's
	// Columns and Types, and key last.Key() once asked for ("" until then).
	header []byte
	last   Segment
	key    string
	// segs is the buffer Decode returns its segments in.
	segs []Segment
}

// Decode is the package's Decode, except that the slice it returns is only valid until the
// next call, and the Columns and Types of its segments may be shared with the segments of
// earlier calls: a caller must copy the segments it keeps and must modify neither.
func (d *Decoder) Decode(b []byte) ([]Segment, error) {
	if len(b) > 0 && b[0] == Version {
		return decodeV2(b[1:], d)
	}
	return Decode(b)
}

// Key is s.Key(), built once for all the segments that share the last header d decoded.
func (d *Decoder) Key(s Segment) string {
	if !sameSlice(s.Columns, d.last.Columns) || !sameSlice(s.Types, d.last.Types) {
		return s.Key()
	}
	if d.key == "" {
		d.key = d.last.Key()
	}
	return d.key
}

// shared reads the header of a segment whose n columns start after its column count, and
// whose encoding starts at start. A header byte for byte equal to the last one shares that
// one's Columns and Types; another becomes the last one.
func (d *Decoder) shared(r *reader, start int, n uint64) Segment {
	skipHeader(r, n)
	if r.err != nil {
		return Segment{}
	}
	h := r.b[start:r.off]
	if d.last.Columns != nil && bytes.Equal(h, d.header) {
		return Segment{Columns: d.last.Columns, Types: d.last.Types}
	}
	// Read h again, allocating the strings this time: skipHeader found it whole.
	hr := &reader{b: h}
	hr.uvarint("column count")
	s := readHeader(hr, n)
	d.header = append(d.header[:0], h...)
	d.last, d.key = Segment{Columns: s.Columns, Types: s.Types}, ""
	return s
}

// sameSlice reports whether a and b are the same slice: same length, same first element.
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}
