package request

import (
	"bytes"
	"strings"
	"testing"
)

// TestParseBytesInPlace: a body read by ReadRaw is parsed where it is, its rows are written once
// with the payload header built around them, and the Result owns its memory, so the body may go
// back to the pool (and be overwritten by the next request) as soon as the parse returns.
func TestParseBytesInPlace(t *testing.T) {
	const base = `"ts":"2026-01-02 03:04:05","id":`
	ndjson := `{` + base + `1,"name":"a"}` + "\n" + `{` + base + `2,"name":"b"}` + "\n"
	cases := []struct {
		name, ct, ce string
		body         []byte
		// inPlace: one segment, so the payload is built around the rows without a copy.
		inPlace bool
		opt     Options
	}{
		{name: "ndjson", ct: ndjsonCT, body: []byte(ndjson), inPlace: true},
		{name: "JSON array", ct: "application/json", body: []byte(`[{` + base + `1},{` + base + `2}]`), inPlace: true},
		{name: "CSV", ct: "text/csv; header=present", body: []byte("ts,id,name\n2026-01-02 03:04:05,1,\"a,b\"\n2026-01-02 03:04:05,2,c\n"), inPlace: true},
		{name: "gzip", ct: ndjsonCT, ce: "gzip", body: gzipBytes(t, []byte(ndjson)), inPlace: true},
		{name: "a rejected first row", ct: ndjsonCT, body: []byte(`{` + base + `"x"}` + "\n" + ndjson), inPlace: true, opt: Options{Partial: true}},
		// Rows omitting different DEFAULT columns make two segments, whose rows interleave.
		{name: "two segments", ct: ndjsonCT, body: []byte(`{` + base + `1,"name":"a"}` + "\n" + `{` + base + `2}` + "\n" + `{` + base + `3,"name":"c"}` + "\n")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw, herr := ReadRaw(bytes.NewReader(c.body), int64(len(c.body)), Limits{})
			if herr != nil {
				t.Fatal(herr)
			}
			res, herr := ParseBytes(c.ct, c.ce, raw, testCols(), Limits{}, c.opt)
			if herr != nil {
				t.Fatal(herr)
			}
			checkResult(t, res)
			want, herr := Parse(c.ct, c.ce, bytes.NewReader(c.body), testCols(), Limits{}, c.opt)
			if herr != nil {
				t.Fatal(herr)
			}
			if !bytes.Equal(res.Payload, want.Payload) || strings.Join(rowsOf(res), "\n") != strings.Join(rowsOf(want), "\n") {
				t.Fatalf("ParseBytes and Parse differ:\n%q\n%q", res.Payload, want.Payload)
			}
			if got := len(res.Segments) == 1 && sameMemory(res.Payload, res.Segments[0].Data); got != c.inPlace {
				t.Fatalf("payload built around the rows: %v, want %v (%d segments)", got, c.inPlace, len(res.Segments))
			}
			// The body goes back to the pool and the next request overwrites it.
			kept := bytes.Clone(res.Payload)
			ReleaseRaw(raw)
			for range 4 {
				next, herr := ReadRaw(bytes.NewReader(bytes.Repeat([]byte{'x'}, len(c.body))), int64(len(c.body)), Limits{})
				if herr != nil {
					t.Fatal(herr)
				}
				defer ReleaseRaw(next)
			}
			if !bytes.Equal(res.Payload, kept) {
				t.Fatal("the Result changed when the body's buffer was reused")
			}
		})
	}
}

// sameMemory reports whether rows are the last bytes of p, in p's own memory.
func sameMemory(p, rows []byte) bool {
	return len(rows) > 0 && len(p) >= len(rows) && &p[len(p)-len(rows)] == &rows[0]
}
