package request

import (
	"bytes"
	"io"
	"net/http"
	"sync"

	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/store"
)

// rowsPool caches validation scratch space between calls; see the note on bufPool.
var rowsPool = sync.Pool{New: func() any { return new(rows) }}

// parseBody is Parse and ParseFormat once the format is known. The body is read from body, or
// is raw when body is nil; an uncompressed raw body is parsed where it is.
func parseBody(f bodyFormat, contentEncoding string, body io.Reader, raw []byte, cols []store.Column, lim Limits, opt Options) (Result, *httpx.Error) {
	lim = lim.withDefaults()
	enc, ok := parseEncoding(contentEncoding)
	if !ok {
		return Result{}, unsupportedEncoding(contentEncoding)
	}
	if body == nil && raw == nil {
		return Result{}, emptyBody()
	}
	p := rowsPool.Get().(*rows)
	defer func() {
		p.release()
		rowsPool.Put(p)
	}()
	var data []byte
	switch {
	case body == nil && enc == encIdentity:
		if int64(len(raw)) > lim.MaxBodyBytes {
			return Result{}, bodyTooLarge(lim.MaxBodyBytes, false)
		}
		data = raw
	default:
		if body == nil {
			body = bytes.NewReader(raw)
		}
		bp := getBuf()
		defer putBuf(bp)
		p.src = bodyReader{r: body, n: lim.MaxBodyBytes + 1}
		var herr *httpx.Error
		data, herr = readBody(enc, &p.src, lim.MaxBodyBytes, *bp)
		*bp = data
		if herr != nil {
			return Result{}, herr
		}
	}
	p.reset(cols, lim.MaxErrors)
	if herr := p.setColumns(opt.Columns); herr != nil {
		return Result{}, herr
	}
	p.setPolicy(opt.Policy)
	// The rows start after room for the payload's header, so the payload is built around them
	// in place (payload.EncodeInPlace) instead of copied.
	p.base = p.headerBound()
	p.out = make([]byte, p.base, p.base+outCap(f.kind, len(data)))
	total, herr := p.split(f, data, lim.MaxRows)
	if herr != nil {
		return Result{}, herr
	}
	if total == 0 {
		return Result{}, emptyBody()
	}
	res := Result{
		Accepted: p.accepted, Rejected: p.rejected, Total: total,
		Errors: p.errs, ErrorCount: p.errCount, ErrorsByCode: p.byCode, Bytes: len(data),
	}
	if p.rejected > 0 && !opt.Partial {
		return Result{}, invalidRows(&res)
	}
	res.Segments = p.segments()
	var err error
	if res.Payload, err = p.payload(res.Segments); err != nil {
		return Result{}, &httpx.Error{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()}
	}
	return res, nil
}

// headerBound is the room a payload header of the table's columns can need.
func (p *rows) headerBound() int {
	text := 0
	for _, c := range p.cols {
		text += len(c.name) + len(c.typ.Name)
	}
	return payload.HeaderBound(len(p.cols), text)
}

// payload encodes segs as the queue payload: in place around the rows when they are the arena's
// only segment (the usual case), else with a copy.
func (p *rows) payload(segs []payload.Segment) ([]byte, error) {
	if len(segs) == 1 && len(p.segs) == 1 && p.segs[0].spans[0] == p.base {
		if out, ok, err := payload.EncodeInPlace(p.out, p.base, segs[0]); ok || err != nil {
			return out, err
		}
	}
	return payload.Encode(segs)
}

// outCap guesses the size of the RowBinary rows of a body of n bytes, so the arena is rarely
// regrown: JSON loses its keys, quotes and separators; CSV and TSV keep about their size.
func outCap(f format, n int) int {
	if f == formatCSV || f == formatTSV {
		return n + 64
	}
	return n*3/4 + 64
}

// segments turns the collected spans into binary payload segments. A segment's rows are
// contiguous in the arena when it is the only one (the usual case) and then alias it; rows of
// several segments interleave and are copied together.
func (p *rows) segments() []payload.Segment {
	if p.accepted == 0 {
		return nil
	}
	segs := make([]payload.Segment, 0, len(p.segs))
	for _, s := range p.segs {
		seg := payload.Segment{Columns: s.cols, Types: s.types, Count: len(s.spans) / 2}
		first, last := s.spans[0], s.spans[len(s.spans)-1]
		if len(p.segs) == 1 {
			seg.Data = p.out[first:last:last]
		} else {
			for i := 0; i+1 < len(s.spans); i += 2 {
				seg.Data = append(seg.Data, p.out[s.spans[i]:s.spans[i+1]]...)
			}
		}
		segs = append(segs, seg)
	}
	return segs
}

// split walks the top level of the body, handing each row to p, and returns the row count.
func (p *rows) split(f bodyFormat, b []byte, maxRows int) (int, *httpx.Error) {
	switch f.kind {
	case formatCSV, formatTSV:
		return p.splitText(f, b, maxRows)
	case formatJSONCompact:
		return p.splitCompact(f, b, maxRows)
	}
	i := skipSpace(b, 0)
	if i >= len(b) {
		return 0, nil
	}
	if f.kind == formatNDJSON {
		return p.splitNDJSON(b, i, maxRows)
	}
	switch b[i] {
	case '{':
		end, serr := p.object(b, i, 0)
		if serr != nil {
			return 0, malformed(0, serr.off, serr.msg)
		}
		if j := skipSpace(b, end); j < len(b) {
			return 0, malformed(1, j, "unexpected data after the object (send several objects as a JSON array, or as NDJSON with Content-Type application/x-ndjson)")
		}
		return 1, nil
	case '[':
	default:
		return 0, malformed(0, i, "the body must be a JSON object or a JSON array of objects")
	}
	i = skipSpace(b, i+1)
	n := 0
	if i < len(b) && b[i] == ']' {
		i++
	} else {
		for {
			if n == maxRows {
				return 0, tooManyRows(maxRows)
			}
			end, herr := p.row(b, i, n)
			if herr != nil {
				return 0, herr
			}
			n++
			i = skipSpace(b, end)
			if i >= len(b) {
				return 0, malformed(n-1, len(b), "unexpected end of input, want ',' or ']'")
			}
			if b[i] == ']' {
				i++
				break
			}
			if b[i] != ',' {
				return 0, malformed(n-1, i, "unexpected "+describe(b[i])+", want ',' or ']'")
			}
			i = skipSpace(b, i+1)
		}
	}
	if j := skipSpace(b, i); j < len(b) {
		return 0, malformed(n, j, "unexpected data after the array")
	}
	return n, nil
}

func (p *rows) splitNDJSON(b []byte, i, maxRows int) (int, *httpx.Error) {
	n := 0
	for i < len(b) {
		if n == maxRows {
			return 0, tooManyRows(maxRows)
		}
		end, herr := p.row(b, i, n)
		if herr != nil {
			return 0, herr
		}
		n++
		for end < len(b) && (b[end] == ' ' || b[end] == '\t' || b[end] == '\r') {
			end++
		}
		if end < len(b) && b[end] != '\n' {
			return 0, malformed(n-1, end, "unexpected "+describe(b[end])+" after the row, want a newline")
		}
		i = skipSpace(b, end)
	}
	return n, nil
}

// row handles the value at b[i] as row number n.
func (p *rows) row(b []byte, i, n int) (int, *httpx.Error) {
	if i < len(b) && b[i] == '{' {
		end, serr := p.object(b, i, n)
		if serr != nil {
			return 0, malformed(n, serr.off, serr.msg)
		}
		return end, nil
	}
	end, serr := scanValue(b, i, 0)
	if serr != nil {
		return 0, malformed(n, serr.off, serr.msg)
	}
	p.notObject(n, b[i:end])
	return end, nil
}
