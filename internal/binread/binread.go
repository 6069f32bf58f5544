// Package binread reads the binary layouts written with encoding/binary's varints and
// length-prefixed byte strings (queue frames, the batch journal, local dedupe records): one
// Reader, whose first error sticks, so a decoder reads every field and checks once.
package binread

import (
	"encoding/binary"
	"errors"
)

// ErrMalformed is the Reader's error: a varint that does not parse or a length past the end.
var ErrMalformed = errors.New("binread: malformed value")

// Reader reads from B, which shrinks as fields are read. After the first error every read
// returns a zero value and Err stays set.
type Reader struct {
	B   []byte
	Err error
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	if r.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.B)
	if n <= 0 {
		r.Err = ErrMalformed
		return 0
	}
	r.B = r.B[n:]
	return v
}

// Varint reads a signed (zig-zag) varint.
func (r *Reader) Varint() int64 {
	if r.Err != nil {
		return 0
	}
	v, n := binary.Varint(r.B)
	if n <= 0 {
		r.Err = ErrMalformed
		return 0
	}
	r.B = r.B[n:]
	return v
}

// Bytes reads a length-prefixed byte string. The result aliases B, its capacity clipped to its
// length so that appending to it never overwrites what follows.
func (r *Reader) Bytes() []byte {
	n := r.Uvarint()
	if r.Err != nil {
		return nil
	}
	if n > uint64(len(r.B)) {
		r.Err = ErrMalformed
		return nil
	}
	v := r.B[:n:n]
	r.B = r.B[n:]
	return v
}

// Fixed reads the next n bytes, aliasing B like Bytes.
func (r *Reader) Fixed(n int) []byte {
	if r.Err != nil {
		return nil
	}
	if n > len(r.B) {
		r.Err = ErrMalformed
		return nil
	}
	v := r.B[:n:n]
	r.B = r.B[n:]
	return v
}
