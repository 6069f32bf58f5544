package binread_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/wavehouse/wavehouse/internal/binread"
)

// TestReadsWhatBinaryWrites: every field written with encoding/binary reads back, a truncated
// input at any length is an error, and the error sticks.
func TestReadsWhatBinaryWrites(t *testing.T) {
	b := binary.AppendUvarint(nil, 300)
	b = binary.AppendVarint(b, -7)
	b = binary.AppendUvarint(b, 3)
	b = append(b, "abc"...)
	b = append(b, 0xAA, 0xBB)
	r := binread.Reader{B: b}
	u, v, s, f := r.Uvarint(), r.Varint(), r.Bytes(), r.Fixed(2)
	if r.Err != nil || u != 300 || v != -7 || string(s) != "abc" || string(f) != "\xAA\xBB" || len(r.B) != 0 {
		t.Fatalf("read %d %d %q %x, rest %d, err %v", u, v, s, f, len(r.B), r.Err)
	}
	if cap(s) != len(s) {
		t.Fatalf("Bytes' capacity %d is not clipped to its length %d", cap(s), len(s))
	}
	for n := range len(b) {
		r := binread.Reader{B: b[:n]}
		r.Uvarint()
		r.Varint()
		r.Bytes()
		r.Fixed(2)
		if !errors.Is(r.Err, binread.ErrMalformed) {
			t.Fatalf("%d of %d bytes read without an error", n, len(b))
		}
		if r.Uvarint() != 0 || r.Bytes() != nil {
			t.Fatalf("a read after the error returned a value")
		}
	}
}
