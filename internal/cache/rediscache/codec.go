package rediscache

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"
)

// Stored values start with a one-byte header naming their encoding.
const (
	encRaw byte = 0
	encS2  byte = 1
)

var errCorrupt = errors.New("corrupt cached value")

// encode frames value, s2-compressing it when it is at least threshold bytes long and
// compression saves space.
func encode(value []byte, threshold int) []byte {
	if len(value) >= threshold {
		buf := make([]byte, 1+s2.MaxEncodedLen(len(value)))
		if enc := s2.Encode(buf[1:], value); len(enc) < len(value) {
			buf[0] = encS2
			return buf[:1+len(enc)]
		}
	}
	return append([]byte{encRaw}, value...)
}

// decode returns the value framed in stored, at most maxLen bytes long.
func decode(stored []byte, maxLen int) ([]byte, error) {
	if len(stored) == 0 {
		return nil, errCorrupt
	}
	switch stored[0] {
	case encRaw:
		return stored[1:], nil
	case encS2:
		n, err := s2.DecodedLen(stored[1:])
		if err != nil || n > maxLen {
			return nil, fmt.Errorf("%w: %d bytes decoded (limit %d): %v", errCorrupt, n, maxLen, err)
		}
		out, err := s2.Decode(make([]byte, n), stored[1:])
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errCorrupt, err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: unknown encoding %d", errCorrupt, stored[0])
}
