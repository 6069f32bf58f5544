package query

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/ClickHouse/ch-go/compress"
)

// blocks splits a compress=1 body into its blocks' method bytes and decompresses it with ch-go's
// reader, which verifies every checksum.
func blocks(t *testing.T, body []byte) (methods []byte, data string) {
	t.Helper()
	for off := 0; off < len(body); {
		if len(body)-off < 25 {
			t.Fatalf("%d bytes after the last whole block", len(body)-off)
		}
		methods = append(methods, body[off+16])
		off += 16 + int(binary.LittleEndian.Uint32(body[off+17:]))
	}
	out, err := io.ReadAll(compress.NewReader(bytes.NewReader(body)))
	if err != nil && !strings.HasSuffix(err.Error(), "EOF") {
		t.Fatalf("decompress: %v", err)
	}
	return methods, string(out)
}

// TestClickHouseCompressedResponse: compress=1 answers in ClickHouse's compressed blocks, LZ4
// unless network_compression_method names another, with the same bytes as without it (a result
// over 1 MiB in several blocks), with no Content-Length of the uncompressed body; an error
// before any data is plain text.
func TestClickHouseCompressedResponse(t *testing.T) {
	f := newFixture(t, nil)
	const sql = "SELECT number, toString(number) FROM system.numbers LIMIT 200000"
	plain := serveCH(t, f.svc, f.target, Access{}, ClickHouseRead{SQL: sql})
	if plain.Code != 200 || plain.Body.Len() < 2<<20 {
		t.Fatalf("uncompressed: %d, %d bytes", plain.Code, plain.Body.Len())
	}
	for _, c := range []struct {
		method string
		want   byte
	}{{"", 0x82}, {"LZ4", 0x82}, {"zstd", 0x90}, {"NONE", 0x02}} {
		t.Run("method "+c.method, func(t *testing.T) {
			set := url.Values{"compress": {"1"}}
			if c.method != "" {
				set.Set("network_compression_method", c.method)
			}
			for _, q := range []string{sql, "SELECT 1"} {
				rec := serveCH(t, f.svc, f.target, Access{}, ClickHouseRead{SQL: q, Settings: set})
				if rec.Code != 200 {
					t.Fatalf("%s: %d %q", q, rec.Code, rec.Body)
				}
				if n := rec.Header().Get("Content-Length"); n != "" && n != strconv.Itoa(rec.Body.Len()) {
					t.Fatalf("%s: Content-Length %s for a %d-byte body", q, n, rec.Body.Len())
				}
				methods, data := blocks(t, rec.Body.Bytes())
				want := "1\n"
				if q == sql {
					want = plain.Body.String()
					if len(methods) < 2 {
						t.Fatalf("a %d-byte result in %d block(s)", len(data), len(methods))
					}
				}
				if data != want {
					t.Fatalf("%s: decompressed %d bytes, want %d", q, len(data), len(want))
				}
				for _, m := range methods {
					if m != c.want {
						t.Fatalf("%s: method byte %#x, want %#x", q, m, c.want)
					}
				}
			}
		})
	}
	rec := serveCH(t, f.svc, f.target, Access{}, ClickHouseRead{SQL: "SELECT * FROM nope", Settings: url.Values{"compress": {"1"}}})
	if rec.Code != 404 || !strings.HasPrefix(rec.Body.String(), "Code: 60. DB::Exception: ") {
		t.Fatalf("an error before any data: %d %q, want a plain 404 Code: 60", rec.Code, rec.Body)
	}
}
