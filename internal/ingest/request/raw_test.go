package request

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadRaw: the body comes back byte for byte (compressed bodies are not decoded), and the
// failures carry the documented codes: 413 ingest.body_too_large one byte past the limit (also
// from http.MaxBytesReader) and 400 ingest.body_read_failed for a body that breaks mid-read.
func TestReadRaw(t *testing.T) {
	gz := gzipBytes(t, []byte(okRow))
	for _, hint := range []int64{0, int64(len(gz)), 1 << 30} {
		got, herr := ReadRaw(bytes.NewReader(gz), hint, Limits{})
		if herr != nil || !bytes.Equal(got, gz) {
			t.Fatalf("hint %d: got %d bytes, %v; want the %d bytes as sent", hint, len(got), herr, len(gz))
		}
	}
	if got, herr := ReadRaw(strings.NewReader(strings.Repeat("x", 100)), 100, Limits{MaxBodyBytes: 100}); herr != nil || len(got) != 100 {
		t.Fatalf("a body of exactly the limit: %d bytes, %v", len(got), herr)
	}
	for _, c := range []struct {
		name   string
		body   io.Reader
		status int
		code   string
	}{
		{"one byte over", strings.NewReader(strings.Repeat("x", 101)), http.StatusRequestEntityTooLarge, CodeBodyTooLarge},
		{"MaxBytesReader", http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader(strings.Repeat("x", 50))), 10), http.StatusRequestEntityTooLarge, CodeBodyTooLarge},
		{"read error", errReader{errBroken}, http.StatusBadRequest, CodeBodyReadFailed},
	} {
		_, herr := ReadRaw(c.body, 0, Limits{MaxBodyBytes: 100})
		if herr == nil || herr.Status != c.status || herr.Code != c.code {
			t.Errorf("%s: got %+v, want %d %s", c.name, herr, c.status, c.code)
		}
	}
}
