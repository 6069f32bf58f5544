package request

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ClickHouse/ch-go/compress"
)

// TestDecodeBlocksLimit: max_body_bytes bounds the decompressed blocks exactly, from their
// headers (no block is decompressed when the total is over) and in what they decompress to; no
// blocks is an empty body.
func TestDecodeBlocksLimit(t *testing.T) {
	lim := Limits{MaxBodyBytes: 100}
	w := compress.NewWriter(compress.LevelZero, compress.LZ4)
	block := func(s string) []byte {
		if err := w.Compress([]byte(s)); err != nil {
			t.Fatal(err)
		}
		return append([]byte(nil), w.Data...)
	}
	at := append(block(strings.Repeat("a", 60)), block(strings.Repeat("b", 40))...)
	out, herr := DecodeBlocks(at, lim)
	if herr != nil || string(out) != strings.Repeat("a", 60)+strings.Repeat("b", 40) {
		t.Fatalf("at the limit: %q %v", out, herr)
	}
	over := append(block(strings.Repeat("a", 60)), block(strings.Repeat("b", 41))...)
	if _, herr := DecodeBlocks(over, lim); herr == nil || herr.Status != http.StatusRequestEntityTooLarge || herr.Code != CodeBodyTooLarge {
		t.Fatalf("one byte over: %+v", herr)
	}
	if out, herr := DecodeBlocks(nil, lim); herr != nil || len(out) != 0 {
		t.Fatalf("no blocks: %q %v", out, herr)
	}
}
