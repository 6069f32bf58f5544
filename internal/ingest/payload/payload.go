// Package payload is the encoding of validated rows inside a queue record: what the api role
// publishes and the ingest role inserts. It is line-oriented and readable in a queue browser:
//
//	{"v":1,"columns":["ts","user","n"]}
//	["2026-01-01 00:00:00","ann",1]
//	["2026-01-01 00:00:01","bob",2]
//
// A payload is one or more segments; each starts with a header line naming its columns (in
// table order) and holds canonical rows (JSON arrays of chtype canonical values in that order).
// Rows of one request that omit different DEFAULT columns land in different segments, because an
// insert names one column list for all its rows and an omitted DEFAULT column must stay omitted
// for the server to compute it.
package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Version is the payload format version written in every header.
const Version = 1

// ErrMalformed reports a payload that cannot be decoded.
var ErrMalformed = errors.New("payload: malformed")

// Segment is rows sharing one column list.
type Segment struct {
	Columns []string
	// Rows are canonical rows; each is one line, so it must not contain a newline (canonical
	// JSON never does).
	Rows [][]byte
}

// Key identifies the column list, so segments of many records can be merged into one insert.
func (s Segment) Key() string { return strings.Join(s.Columns, "\x00") }

type header struct {
	V       int      `json:"v"`
	Columns []string `json:"columns"`
}

// Encode returns the payload of segs. Empty segments are skipped.
func Encode(segs []Segment) ([]byte, error) {
	size := 0
	for _, s := range segs {
		for _, r := range s.Rows {
			size += len(r) + 1
		}
		size += 32 + 16*len(s.Columns)
	}
	out := make([]byte, 0, size)
	for _, s := range segs {
		if len(s.Rows) == 0 {
			continue
		}
		h, err := json.Marshal(header{V: Version, Columns: s.Columns})
		if err != nil {
			return nil, err
		}
		out = append(append(out, h...), '\n')
		for i, r := range s.Rows {
			if len(r) == 0 || r[0] != '[' || bytes.IndexByte(r, '\n') >= 0 {
				return nil, fmt.Errorf("payload: row %d is not a one-line JSON array", i)
			}
			out = append(append(out, r...), '\n')
		}
	}
	return out, nil
}

// Decode parses a payload. Row slices alias b.
func Decode(b []byte) ([]Segment, error) {
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
			if h.V != Version {
				return nil, fmt.Errorf("%w: line %d: version %d, want %d", ErrMalformed, line, h.V, Version)
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

// Rows counts the rows of a payload without decoding headers.
func Rows(b []byte) int {
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
