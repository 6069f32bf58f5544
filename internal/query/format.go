package query

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/wavehouse/wavehouse/internal/store"
)

// Format is an output format of /v1/query.
type Format string

// The formats. JSON is ClickHouse's JSON layout: {meta, data, rows, statistics}.
const (
	FormatJSON   Format = "json"
	FormatNDJSON Format = "ndjson"
	FormatCSV    Format = "csv"
)

// ContentType is the media type of a format.
func (f Format) ContentType() string {
	if cf, ok := parseChFormat(f); ok {
		return chFormatInfos[cf.kind].contentType
	}
	switch f {
	case FormatNDJSON:
		return "application/x-ndjson"
	case FormatCSV:
		return "text/csv; charset=utf-8"
	}
	return "application/json"
}

// encoder writes rows in one format. Row values are canonical JSON arrays (see chtype), so 64-bit
// integers stay exact.
type encoder struct {
	f      Format
	w      io.Writer
	names  [][]byte // JSON-quoted column names
	cols   []store.ResultColumn
	n      uint64
	buf    []byte
	values []json.RawMessage
}

// rowEncoder writes a result in one format: begin before the first row, row per row, end
// after the last (or on failure).
type rowEncoder interface {
	begin() error
	row(canonical []byte) error
	end(st store.Stats, failure error) error
}

// newEncoder returns the encoder of format f: /v1/query's, or a ClickHouse output format's.
func newEncoder(f Format, w io.Writer, cols []store.ResultColumn) rowEncoder {
	if cf, ok := parseChFormat(f); ok {
		return newCHEncoder(cf, w, cols)
	}
	return newGatewayEncoder(f, w, cols)
}

func newGatewayEncoder(f Format, w io.Writer, cols []store.ResultColumn) *encoder {
	e := &encoder{f: f, w: w, cols: cols}
	for _, c := range cols {
		q, _ := json.Marshal(c.Name)
		e.names = append(e.names, q)
	}
	return e
}

func (e *encoder) begin() error {
	switch e.f {
	case FormatJSON:
		e.buf = append(e.buf[:0], `{"meta":[`...)
		for i, c := range e.cols {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			t, _ := json.Marshal(c.TypeName)
			e.buf = append(e.buf, `{"name":`...)
			e.buf = append(e.buf, e.names[i]...)
			e.buf = append(e.buf, `,"type":`...)
			e.buf = append(e.buf, t...)
			e.buf = append(e.buf, '}')
		}
		e.buf = append(e.buf, `],"data":[`...)
	case FormatCSV:
		e.buf = e.buf[:0]
		for i, c := range e.cols {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = appendCSVString(e.buf, c.Name)
		}
		e.buf = append(e.buf, '\n')
	default:
		return nil
	}
	_, err := e.w.Write(e.buf)
	return err
}

func (e *encoder) row(canonical []byte) error {
	e.values = e.values[:0]
	if err := json.Unmarshal(canonical, &e.values); err != nil || len(e.values) != len(e.cols) {
		return fmt.Errorf("query: malformed result row")
	}
	b := e.buf[:0]
	switch e.f {
	case FormatJSON, FormatNDJSON:
		if e.f == FormatJSON && e.n > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		for i, v := range e.values {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, e.names[i]...)
			b = append(b, ':')
			b = append(b, v...)
		}
		b = append(b, '}')
		if e.f == FormatNDJSON {
			b = append(b, '\n')
		}
	case FormatCSV:
		for i, v := range e.values {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCSVValue(b, v)
		}
		b = append(b, '\n')
	}
	e.buf = b
	e.n++
	_, err := e.w.Write(b)
	return err
}

// end closes the document; failure, when not nil, is reported inside it (the status line was
// already sent).
func (e *encoder) end(st store.Stats, failure error) error {
	if e.f != FormatJSON {
		if failure != nil {
			_, _ = fmt.Fprintf(e.w, "\nexception: %s\n", failure)
		}
		return nil
	}
	b := append(e.buf[:0], `],"rows":`...)
	b = strconv.AppendUint(b, e.n, 10)
	b = append(b, `,"statistics":{"elapsed":`...)
	b = strconv.AppendFloat(b, st.Elapsed.Seconds(), 'f', -1, 64)
	b = append(b, `,"rows_read":`...)
	b = strconv.AppendUint(b, st.RowsRead, 10)
	b = append(b, `,"bytes_read":`...)
	b = strconv.AppendUint(b, st.BytesRead, 10)
	b = append(b, '}')
	if failure != nil {
		msg, _ := json.Marshal(failure.Error())
		b = append(b, `,"exception":`...)
		b = append(b, msg...)
	}
	b = append(b, "}\n"...)
	_, err := e.w.Write(b)
	return err
}

func appendCSVValue(b []byte, v json.RawMessage) []byte {
	switch {
	case len(v) == 0 || bytes.Equal(v, []byte("null")):
		return append(b, `\N`...)
	case v[0] == '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			return appendCSVString(b, s)
		}
	case v[0] == '[' || v[0] == '{':
		return appendCSVString(b, string(v))
	}
	return append(b, v...)
}

func appendCSVString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}
