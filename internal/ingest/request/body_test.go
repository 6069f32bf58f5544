package request

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

const okRow = `{"ts":"2026-01-02 03:04:05","id":1}`

func TestRequestErrors(t *testing.T) {
	big := "[" + strings.Repeat(okRow+",", 40) + okRow + "]"
	tests := []struct {
		name, ct, ce string
		body         io.Reader
		lim          Limits
		status       int
		code         string
		row, off     int // checked for malformed JSON
	}{
		{name: "text/plain", ct: "text/plain", body: strings.NewReader(okRow), status: 415, code: CodeUnsupportedMediaType},
		{name: "no content type", ct: "", body: strings.NewReader(okRow), status: 415, code: CodeUnsupportedMediaType},
		{name: "form", ct: "application/x-www-form-urlencoded", body: strings.NewReader(okRow), status: 415, code: CodeUnsupportedMediaType},
		{name: "unix compress", ct: "application/json", ce: "compress", body: strings.NewReader(okRow), status: 415, code: CodeUnsupportedEncoding},
		{name: "two encodings", ct: "application/json", ce: "gzip, zstd", body: strings.NewReader(okRow), status: 415, code: CodeUnsupportedEncoding},
		{name: "corrupt gzip", ct: "application/json", ce: "gzip", body: strings.NewReader(okRow), status: 400, code: CodeCorruptBody},
		{name: "truncated gzip", ct: "application/json", ce: "gzip", body: bytes.NewReader(gzipBytes(t, []byte(big))[:30]), status: 400, code: CodeCorruptBody},
		{name: "corrupt zstd", ct: "application/json", ce: "zstd", body: strings.NewReader(okRow), status: 400, code: CodeCorruptBody},
		{name: "truncated zstd", ct: "application/json", ce: "zstd", body: bytes.NewReader(zstdBytes(t, []byte(big))[:20]), status: 400, code: CodeCorruptBody},
		{name: "body too large", ct: "application/json", body: strings.NewReader(big), lim: Limits{MaxBodyBytes: 100}, status: 413, code: CodeBodyTooLarge},
		{name: "gzip body too large", ct: "application/json", ce: "gzip", body: bytes.NewReader(gzipBytes(t, bytes.Repeat([]byte(okRow), 1000))), lim: Limits{MaxBodyBytes: 100}, status: 413, code: CodeBodyTooLarge},
		{name: "decompressed too large", ct: "application/json", ce: "zstd", body: bytes.NewReader(zstdBytes(t, []byte(big))), lim: Limits{MaxBodyBytes: 1000}, status: 413, code: CodeBodyTooLarge},
		{name: "MaxBytesReader", ct: "application/json", body: http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader(big)), 10), status: 413, code: CodeBodyTooLarge},
		{name: "read error", ct: "application/json", body: errReader{errBroken}, status: 400, code: CodeBodyReadFailed},
		{name: "read error under gzip", ct: "application/json", ce: "gzip", body: errReader{errBroken}, status: 400, code: CodeBodyReadFailed},
		{name: "too many rows array", ct: "application/json", body: strings.NewReader(big), lim: Limits{MaxRows: 40}, status: 413, code: CodeTooManyRows},
		{name: "too many rows ndjson", ct: ndjsonCT, body: strings.NewReader(strings.Repeat(okRow+"\n", 3)), lim: Limits{MaxRows: 2}, status: 413, code: CodeTooManyRows},
		{name: "empty", ct: "application/json", body: strings.NewReader(""), status: 400, code: CodeEmptyBody},
		{name: "nil body", ct: "application/json", body: nil, status: 400, code: CodeEmptyBody},
		{name: "whitespace", ct: "application/json", body: strings.NewReader(" \n\t "), status: 400, code: CodeEmptyBody},
		{name: "empty array", ct: "application/json", body: strings.NewReader(" [ ] "), status: 400, code: CodeEmptyBody},
		{name: "blank lines", ct: ndjsonCT, body: strings.NewReader("\n\r\n  \n"), status: 400, code: CodeEmptyBody},
		{name: "empty gzip", ct: "application/json", ce: "gzip", body: bytes.NewReader(gzipBytes(t, nil)), status: 400, code: CodeEmptyBody},
		{name: "missing value", ct: "application/json", body: strings.NewReader(`{"id":}`), status: 400, code: CodeMalformedJSON, row: 0, off: 6},
		{name: "second ndjson row broken", ct: ndjsonCT, body: strings.NewReader(okRow + "\n{\"id\":1,}\n"), status: 400, code: CodeMalformedJSON, row: 1, off: len(okRow) + 1 + 8},
		{name: "trailing comma", ct: "application/json", body: strings.NewReader(`[` + okRow + `,]`), status: 400, code: CodeMalformedJSON, row: 1, off: len(okRow) + 2},
		{name: "unclosed array", ct: "application/json", body: strings.NewReader(`[` + okRow), status: 400, code: CodeMalformedJSON, row: 0, off: len(okRow) + 1},
		{name: "two rows on one ndjson line", ct: ndjsonCT, body: strings.NewReader(okRow + " " + okRow), status: 400, code: CodeMalformedJSON, row: 0, off: len(okRow) + 1},
		{name: "objects without array", ct: "application/json", body: strings.NewReader(okRow + "\n" + okRow), status: 400, code: CodeMalformedJSON, row: 1, off: len(okRow) + 1},
		{name: "scalar body", ct: "application/json", body: strings.NewReader(` 42`), status: 400, code: CodeMalformedJSON, row: 0, off: 1},
		{name: "unterminated string", ct: "application/json", body: strings.NewReader(`{"id":"1}`), status: 400, code: CodeMalformedJSON, row: 0, off: 6},
		{name: "control character", ct: "application/json", body: strings.NewReader("{\"name\":\"a\tb\"}"), status: 400, code: CodeMalformedJSON, row: 0, off: 10},
		{name: "bad escape", ct: "application/json", body: strings.NewReader(`{"name":"a\qb"}`), status: 400, code: CodeMalformedJSON, row: 0, off: 10},
		{name: "bad literal", ct: "application/json", body: strings.NewReader(`{"note":nul}`), status: 400, code: CodeMalformedJSON, row: 0, off: 8},
		{name: "bad number", ct: "application/json", body: strings.NewReader(`{"id":01}`), status: 400, code: CodeMalformedJSON, row: 0, off: 7},
		{name: "single quotes", ct: "application/json", body: strings.NewReader(`{'id':1}`), status: 400, code: CodeMalformedJSON, row: 0, off: 1},
		{name: "too deep", ct: "application/json", body: strings.NewReader(`{"tags":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`), status: 400, code: CodeMalformedJSON, row: 0, off: 8 + maxDepth - 1}, // the row object is level 1
		{name: "broken non-object row", ct: ndjsonCT, body: strings.NewReader("[1,\n"), status: 400, code: CodeMalformedJSON, row: 0, off: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, herr := Parse(tc.ct, tc.ce, tc.body, testCols(), tc.lim, Options{Partial: true})
			if herr == nil {
				t.Fatalf("want %d %s, got result %+v", tc.status, tc.code, res)
			}
			if herr.Status != tc.status || herr.Code != tc.code {
				t.Fatalf("want %d %s, got %d %s: %s", tc.status, tc.code, herr.Status, herr.Code, herr.Message)
			}
			if herr.Message == "" || herr.Retryable {
				t.Fatalf("error %+v: want a message and not retryable", herr)
			}
			if tc.code == CodeMalformedJSON {
				d := herr.Details.(map[string]int)
				if d["row"] != tc.row || d["offset"] != tc.off {
					t.Fatalf("want row %d offset %d, got %v (%s)", tc.row, tc.off, d, herr.Message)
				}
			}
			if len(res.Segments) != 0 || res.Total != 0 {
				t.Fatalf("an error came with a result: %+v", res)
			}
		})
	}
}

func TestUnsupportedMediaTypeListsAccepted(t *testing.T) {
	_, herr := Parse("application/xml", "", strings.NewReader(okRow), testCols(), Limits{}, Options{})
	for _, mt := range AcceptedMediaTypes() {
		if !strings.Contains(herr.Message, mt) {
			t.Errorf("message %q does not list %s", herr.Message, mt)
		}
	}
	_, herr = Parse("application/json", "xz", strings.NewReader(okRow), testCols(), Limits{}, Options{})
	for _, enc := range AcceptedEncodings() {
		if !strings.Contains(herr.Message, enc) {
			t.Errorf("message %q does not list %s", herr.Message, enc)
		}
	}
}

func TestMediaTypesAndEncodings(t *testing.T) {
	want := []string{`ts,id,uid,code,d,i64: ["2026-01-02 03:04:05",1,null,null,null,null]`}
	raw := []byte(okRow + "\n")
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON",
		"application/x-ndjson", "application/ndjson", "application/jsonl; charset=UTF-8"} {
		for _, enc := range []struct {
			ce   string
			body []byte
		}{{"", raw}, {"identity", raw}, {"gzip", gzipBytes(t, raw)}, {"GZIP", gzipBytes(t, raw)}, {"zstd", zstdBytes(t, raw)}} {
			res, herr := Parse(ct, enc.ce, bytes.NewReader(enc.body), testCols(), Limits{}, Options{})
			if herr != nil {
				t.Fatalf("%s %s: %+v", ct, enc.ce, herr)
			}
			if got := rowsOf(res); len(got) != 1 || got[0] != want[0] {
				t.Fatalf("%s %s: got %q", ct, enc.ce, got)
			}
			if res.Bytes != len(raw) {
				t.Fatalf("%s %s: Bytes %d, want %d", ct, enc.ce, res.Bytes, len(raw))
			}
		}
	}
}

func TestCompressedBodiesMatchIdentity(t *testing.T) {
	body := ndjson(500)
	plain, herr := Parse(ndjsonCT, "", bytes.NewReader(body), benchCols(), Limits{}, Options{})
	if herr != nil {
		t.Fatal(herr)
	}
	for ce, b := range map[string][]byte{"gzip": gzipBytes(t, body), "zstd": zstdBytes(t, body)} {
		res, herr := Parse(ndjsonCT, ce, bytes.NewReader(b), benchCols(), Limits{}, Options{})
		if herr != nil {
			t.Fatalf("%s: %+v", ce, herr)
		}
		if res.Accepted != 500 || strings.Join(rowsOf(res), "\n") != strings.Join(rowsOf(plain), "\n") {
			t.Fatalf("%s body decoded differently from the identity body", ce)
		}
	}
}

// zeros streams n zero bytes without holding them in memory.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > z.n {
		p = p[:z.n]
	}
	clear(p)
	z.n -= int64(len(p))
	return len(p), nil
}

// bomb returns a body that expands to size zero bytes: one compressed member (gzip) or frame
// (zstd) of 1 MiB of zeros, repeated, which both formats decode as one stream.
func bomb(t *testing.T, ce string, size int64) []byte {
	t.Helper()
	var one bytes.Buffer
	var w io.WriteCloser
	var err error
	switch ce {
	case "gzip":
		w, err = gzip.NewWriterLevel(&one, gzip.BestCompression)
	case "zstd":
		w, err = zstd.NewWriter(&one, zstd.WithEncoderConcurrency(1))
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, &zeros{1 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.Repeat(one.Bytes(), int(size>>20))
}

func TestCompressionBombRefusedWithoutAllocating(t *testing.T) {
	const expanded = 256 << 20
	const limit = 1 << 20
	for _, ce := range []string{"gzip", "zstd"} {
		t.Run(ce, func(t *testing.T) {
			b := bomb(t, ce, expanded)
			if len(b) > limit {
				t.Fatalf("the bomb itself is %d bytes; it must fit the limit to test expansion", len(b))
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, herr := Parse("application/json", ce, bytes.NewReader(b), testCols(), Limits{MaxBodyBytes: limit}, Options{})
			runtime.ReadMemStats(&after)
			if herr == nil || herr.Status != 413 || herr.Code != CodeBodyTooLarge {
				t.Fatalf("want 413 %s, got %+v", CodeBodyTooLarge, herr)
			}
			if !strings.Contains(herr.Message, "decompressed") {
				t.Fatalf("message %q does not say the decompressed body is too large", herr.Message)
			}
			// The buffer never grows past the limit; decoder state adds a few MiB at most.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 24<<20 {
				t.Fatalf("refusing a %d MiB bomb allocated %d MiB", expanded>>20, alloc>>20)
			}
		})
	}
}
