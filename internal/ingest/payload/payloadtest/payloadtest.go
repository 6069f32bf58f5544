// Package payloadtest builds queue payloads for tests: the version 1 (canonical JSON) encoder of
// earlier releases, kept only as a fixture to write a backlog an upgrade must still insert, and
// version 2 segments built from canonical JSON rows.
package payloadtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/ingest/payload"
)

// EncodeV1 returns segs (canonical JSON rows in Rows) in the version 1 format, byte for byte as the
// releases before payload version 2 published it. Empty segments are skipped.
func EncodeV1(segs []payload.Segment) ([]byte, error) {
	var out []byte
	for _, s := range segs {
		if len(s.Rows) == 0 {
			continue
		}
		h, err := json.Marshal(struct {
			V       int      `json:"v"`
			Columns []string `json:"columns"`
		}{payload.Version1, s.Columns})
		if err != nil {
			return nil, err
		}
		out = append(append(out, h...), '\n')
		for i, r := range s.Rows {
			if len(r) == 0 || r[0] != '[' || bytes.IndexByte(r, '\n') >= 0 {
				return nil, fmt.Errorf("payloadtest: row %d is not a one-line JSON array", i)
			}
			out = append(append(out, r...), '\n')
		}
	}
	return out, nil
}

// Binary returns the version 2 segment of rows, each a JSON array of one value per column
// (canonical or any value the column type accepts), encoded against types.
func Binary(columns, types []string, rows ...string) (payload.Segment, error) {
	ts := make([]*chtype.Type, len(types))
	for i, name := range types {
		t, err := chtype.Parse(name)
		if err != nil {
			return payload.Segment{}, err
		}
		ts[i] = t
	}
	seg := payload.Segment{Columns: columns, Types: types, Count: len(rows)}
	for ri, row := range rows {
		var vals []json.RawMessage
		if err := json.Unmarshal([]byte(row), &vals); err != nil || len(vals) != len(ts) {
			return payload.Segment{}, fmt.Errorf("payloadtest: row %d is not a JSON array of %d values", ri, len(ts))
		}
		for c, v := range vals {
			var err error
			if seg.Data, err = ts[c].AppendRowBinary(seg.Data, v); err != nil {
				return payload.Segment{}, fmt.Errorf("payloadtest: row %d column %s: %w", ri, columns[c], err)
			}
		}
	}
	return seg, nil
}

// Encode is payload.Encode of the Binary segment of rows; it fails t on error.
func Encode(t testing.TB, columns, types []string, rows ...string) []byte {
	t.Helper()
	seg, err := Binary(columns, types, rows...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := payload.Encode([]payload.Segment{seg})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
