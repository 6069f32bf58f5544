package request

import (
	"bytes"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// A zstd frame may ask the decoder for a window of up to gigabytes; a frame asking for more
// than zstdMaxWindow is refused instead of allocated.
func TestZstdHugeWindowRefused(t *testing.T) {
	body := strings.Repeat(okRow+"\n", 20000) // > 256 KiB, so the encoder cannot shrink the window to the content
	encode := func(window int) []byte {
		var out bytes.Buffer
		zw, err := zstd.NewWriter(&out, zstd.WithWindowSize(window), zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := zw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	res, herr := Parse(ndjsonCT, "zstd", bytes.NewReader(encode(zstdMaxWindow)), testCols(), Limits{}, Options{})
	if herr != nil || res.Accepted != 20000 {
		t.Fatalf("a frame with an %d-byte window: %+v", zstdMaxWindow, herr)
	}
	_, herr = Parse(ndjsonCT, "zstd", bytes.NewReader(encode(64<<20)), testCols(), Limits{}, Options{})
	if herr == nil || herr.Status != 400 || herr.Code != CodeCorruptBody {
		t.Fatalf("want 400 %s for a 64 MiB window, got %+v", CodeCorruptBody, herr)
	}
}
