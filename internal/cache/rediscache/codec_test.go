package rediscache

import (
	"bytes"
	"crypto/rand"
	"errors"
	"testing"
)

func TestCodecRoundTrip(t *testing.T) {
	random := make([]byte, 4096)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		value   []byte
		wantEnc byte
	}{
		"empty":          {nil, encRaw},
		"small":          {[]byte("abc"), encRaw},
		"compressible":   {bytes.Repeat([]byte("abcdef"), 1000), encS2},
		"incompressible": {random, encRaw},
	} {
		stored := encode(tc.value, 1024)
		if stored[0] != tc.wantEnc {
			t.Errorf("%s: encoding %d; want %d", name, stored[0], tc.wantEnc)
		}
		got, err := decode(stored, 1<<20)
		if err != nil || !bytes.Equal(got, tc.value) {
			t.Errorf("%s: decode = %d bytes, %v; want the original %d bytes", name, len(got), err, len(tc.value))
		}
	}
	big := encode(bytes.Repeat([]byte("x"), 10000), 1)
	if _, err := decode(big, 100); !errors.Is(err, errCorrupt) {
		t.Errorf("decode above the size limit = %v; want errCorrupt", err)
	}
	for _, bad := range [][]byte{nil, {7}, {encS2, 0xff, 0xff}} {
		if _, err := decode(bad, 1<<20); !errors.Is(err, errCorrupt) {
			t.Errorf("decode(%v) = %v; want errCorrupt", bad, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{encRaw, 'a'})
	f.Add(encode(bytes.Repeat([]byte("ab"), 600), 1))
	f.Add([]byte{encS2, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, stored []byte) {
		got, err := decode(stored, 1<<16)
		if err == nil && len(got) > 1<<16 && stored[0] == encS2 {
			t.Fatalf("decoded %d bytes past the limit", len(got))
		}
	})
}
