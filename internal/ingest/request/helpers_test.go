package request

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/store"
)

// testCols is a table exercising every column flavour validation distinguishes.
func testCols() []store.Column {
	return []store.Column{
		store.NewColumn("ts", "DateTime", "", ""),
		store.NewColumn("id", "UInt64", "", ""),
		store.NewColumn("u8", "UInt8", "DEFAULT", "0"),
		store.NewColumn("name", "String", "DEFAULT", "''"),
		store.NewColumn("uid", "Nullable(UUID)", "", ""),
		store.NewColumn("code", "Nullable(FixedString(2))", "", ""),
		store.NewColumn("d", "Nullable(Date)", "", ""),
		store.NewColumn("tags", "Array(String)", "DEFAULT", "[]"),
		store.NewColumn("note", "Nullable(String)", "DEFAULT", "'x'"),
		store.NewColumn("i64", "Nullable(Int64)", "", ""),
		store.NewColumn("m", "UInt8", "MATERIALIZED", "u8 + 1"),
		store.NewColumn("a", "UInt8", "ALIAS", "u8"),
		store.NewColumn("agg", "AggregateFunction(sum, UInt64)", "DEFAULT", "0"),
	}
}

const ndjsonCT = "application/x-ndjson"

func parse(t *testing.T, ct, body string, opt Options) (Result, *httpx.Error) {
	t.Helper()
	return Parse(ct, "", strings.NewReader(body), testCols(), Limits{}, opt)
}

// rowsOf renders the segments as "col,col: row" lines for compact assertions.
func rowsOf(res Result) []string {
	var out []string
	for _, s := range res.Segments {
		rows, err := s.CanonicalRows()
		if err != nil {
			out = append(out, "unreadable segment: "+err.Error())
		}
		for _, r := range rows {
			out = append(out, strings.Join(s.Columns, ",")+": "+string(r))
		}
	}
	return out
}

// rowErrorsOf returns the row errors of an atomic failure.
func rowErrorsOf(t *testing.T, herr *httpx.Error) InvalidRows {
	t.Helper()
	if herr == nil || herr.Code != CodeInvalidRows || herr.Status != 400 {
		t.Fatalf("want 400 %s, got %+v", CodeInvalidRows, herr)
	}
	d, ok := herr.Details.(InvalidRows)
	if !ok {
		t.Fatalf("details are %T", herr.Details)
	}
	return d
}

// checkResult asserts the invariants every successful Result holds.
func checkResult(t testing.TB, res Result) {
	t.Helper()
	if res.Accepted+res.Rejected != res.Total || res.Total == 0 {
		t.Fatalf("counts: accepted %d + rejected %d != total %d", res.Accepted, res.Rejected, res.Total)
	}
	n := 0
	for _, s := range res.Segments {
		if len(s.Columns) == 0 || s.Len() == 0 || !s.Binary() || len(s.Types) != len(s.Columns) {
			t.Fatalf("degenerate segment %+v", s)
		}
		rows, err := s.CanonicalRows()
		if err != nil {
			t.Fatalf("segment %+v does not read back: %v", s, err)
		}
		for _, r := range rows {
			var vals []json.RawMessage
			if err := json.Unmarshal(r, &vals); err != nil {
				t.Fatalf("row %q is not a JSON array: %v", r, err)
			}
			if len(vals) != len(s.Columns) {
				t.Fatalf("row %q has %d values for columns %v", r, len(vals), s.Columns)
			}
			if bytes.IndexByte(r, '\n') >= 0 {
				t.Fatalf("row %q holds a newline", r)
			}
			n++
		}
	}
	if n != res.Accepted {
		t.Fatalf("segments hold %d rows, accepted %d", n, res.Accepted)
	}
	if res.Accepted > 0 {
		enc, err := payload.Encode(res.Segments)
		if err != nil {
			t.Fatalf("payload.Encode: %v", err)
		}
		if _, err := payload.Decode(enc); err != nil {
			t.Fatalf("payload.Decode: %v", err)
		}
		if !bytes.Equal(res.Payload, enc) {
			t.Fatalf("Payload is not payload.Encode(Segments):\n%q\n%q", res.Payload, enc)
		}
	}
}

// errReader fails every read.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

var errBroken = errors.New("connection reset")
