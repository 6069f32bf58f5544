package api

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/ClickHouse/ch-go/compress"
	"github.com/go-faster/city"
	"github.com/klauspost/compress/gzip"
)

// chBlocks is s in ClickHouse's compressed-block framing by method m, cut into parts blocks
// (clickhouse-go sends one per Native block).
func chBlocks(t *testing.T, m compress.Method, s string, parts int) []byte {
	t.Helper()
	w := compress.NewWriter(compress.LevelZero, m)
	var out []byte
	step := (len(s) + parts - 1) / parts
	for i := 0; i < len(s); i += step {
		if err := w.Compress([]byte(s[i:min(i+step, len(s))])); err != nil {
			t.Fatal(err)
		}
		out = append(out, w.Data...)
	}
	return out
}

// chPostBlocks posts body with ?decompress=1 and the statement in ?query= (when not empty).
func (f *fixture) chPostBlocks(t *testing.T, query string, body []byte, header ...string) response {
	t.Helper()
	path := "/?decompress=1&compress=1&network_compression_method=LZ4"
	if query != "" {
		path += "&query=" + url.QueryEscape(query)
	}
	h := map[string]string{}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	return f.do(t, call{method: http.MethodPost, path: path, key: f.all, body: string(body), header: h})
}

// TestClickHouseDecompressEveryFormat: with ?decompress=1 (clickhouse-go over HTTP with LZ4 or
// ZSTD compression) every input format lands its rows once, the same canonical rows as sent
// uncompressed, from LZ4, ZSTD and uncompressed blocks, one or several, also under a
// Content-Encoding, and with the statement in the blocks.
func TestClickHouseDecompressEveryFormat(t *testing.T) {
	f := newFixture(t, options{})
	want := []string{`ts,user,note=["2026-01-01 00:00:00","a",null]`, `ts,user,note=["2026-01-01 00:00:01","b",null]`}
	for _, m := range []compress.Method{compress.LZ4, compress.ZSTD, compress.None} {
		for _, tc := range everyFormat() {
			t.Run(m.String()+"/"+tc.format, func(t *testing.T) {
				for _, parts := range []int{1, 3} {
					r := f.chPostBlocks(t, "INSERT INTO events"+tc.columns()+" FORMAT "+tc.format, chBlocks(t, m, tc.body, parts))
					if r.status != http.StatusOK || len(r.body) != 0 {
						t.Fatalf("%d blocks: got %d %q, want 200 with an empty body", parts, r.status, r.body)
					}
					if got := f.queuedRows(t); !slices.Equal(got, want) {
						t.Fatalf("%d blocks: queued %q, want %q", parts, got, want)
					}
				}
			})
		}
	}
	row := `{"ts":"2026-01-01 00:00:00","user":"a"}` + "\n" + `{"ts":"2026-01-01 00:00:01","user":"b"}`
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(chBlocks(t, compress.LZ4, row, 2))
	_ = zw.Close()
	for name, post := range map[string]func() response{
		"statement in the blocks": func() response {
			return f.chPostBlocks(t, "", chBlocks(t, compress.ZSTD, "INSERT INTO events FORMAT JSONEachRow\n"+row, 2))
		},
		"param then the blocks": func() response {
			return f.chPostBlocks(t, "INSERT INTO events", chBlocks(t, compress.LZ4, "FORMAT JSONEachRow\n"+row, 1))
		},
		"blocks under gzip": func() response {
			return f.chPostBlocks(t, "INSERT INTO events FORMAT JSONEachRow", gz.Bytes(), "Content-Encoding", "gzip")
		},
	} {
		if r := post(); r.status != http.StatusOK {
			t.Fatalf("%s: %d %q", name, r.status, r.body)
		}
		if got := f.queuedRows(t); !slices.Equal(got, want) {
			t.Fatalf("%s: queued %q", name, got)
		}
	}
	// A read whose statement is in the blocks, answered in blocks (compress=1).
	r := f.chPostBlocks(t, "", chBlocks(t, compress.LZ4, "SELECT 1", 1))
	out, err := io.ReadAll(compress.NewReader(bytes.NewReader(r.body)))
	if r.status != http.StatusOK || string(out) != "1\n" || (err != nil && !strings.HasSuffix(err.Error(), "EOF")) {
		t.Fatalf("read in blocks: %d %q (%q, %v)", r.status, r.body, out, err)
	}
}

// TestClickHouseDecompressRefusals: a block whose checksum does not match, a truncated block or
// header, a block of an unknown method and blocks holding more than max_body_bytes are refused
// with ClickHouse's codes, and nothing is queued.
func TestClickHouseDecompressRefusals(t *testing.T) {
	f := newFixture(t, options{cfg: func(c *Config) { c.Limits.MaxBodyBytes = 300 }})
	const ins = "INSERT INTO events FORMAT JSONEachRow"
	row := `{"ts":"2026-01-01 00:00:00","user":"a"}` + "\n"
	good := chBlocks(t, compress.LZ4, row+row, 2)
	first := 16 + int(binary.LittleEndian.Uint32(good[17:]))

	corrupt := slices.Clone(good)
	corrupt[first+30] ^= 0x40 // a data byte of the second block
	wantCHError(t, f.chPostBlocks(t, ins, corrupt), 400, 40, "clickhouse.checksum_mismatch", "Checksum doesn't match", "byte offset "+itoa(first))
	badSum := slices.Clone(good)
	badSum[0] ^= 1
	wantCHError(t, f.chPostBlocks(t, ins, badSum), 400, 40, "clickhouse.checksum_mismatch", "byte offset 0")

	wantCHError(t, f.chPostBlocks(t, ins, good[:len(good)-1]), 400, 271, "clickhouse.bad_compressed_block", "byte offset "+itoa(first), "truncated")
	wantCHError(t, f.chPostBlocks(t, ins, good[:first+10]), 400, 271, "clickhouse.bad_compressed_block", "header (truncated)")
	wantCHError(t, f.chPostBlocks(t, ins, append(slices.Clone(good), 0x02)), 400, 271, "clickhouse.bad_compressed_block", "truncated")

	// A method byte ch-go does not know, under a valid checksum.
	unknown := chBlocks(t, compress.None, row, 1)
	unknown[16] = 0x91
	h := city.CH128(unknown[16:])
	binary.LittleEndian.PutUint64(unknown[0:], h.Low)
	binary.LittleEndian.PutUint64(unknown[8:], h.High)
	wantCHError(t, f.chPostBlocks(t, ins, unknown), 400, 271, "clickhouse.bad_compressed_block", "0x91")

	// LZ4 data that does not decompress to the size its header declares.
	short := chBlocks(t, compress.LZ4, row, 1)
	binary.LittleEndian.PutUint32(short[21:], uint32(len(row)+5))
	h = city.CH128(short[16:])
	binary.LittleEndian.PutUint64(short[0:], h.Low)
	binary.LittleEndian.PutUint64(short[8:], h.High)
	wantCHError(t, f.chPostBlocks(t, ins, short), 400, 271, "clickhouse.bad_compressed_block")

	// Over max_body_bytes once decompressed: a small body of blocks that decompress past it, and
	// a header that only claims to.
	big := chBlocks(t, compress.LZ4, strings.Repeat(row, 10), 2)
	if len(big) > 300 {
		t.Fatalf("the compressed body is %d bytes, over the limit itself", len(big))
	}
	wantCHError(t, f.chPostBlocks(t, ins, big), 413, 307, "ingest.body_too_large", "decompressed body", "300")
	claims := slices.Clone(good[:first])
	binary.LittleEndian.PutUint32(claims[21:], 1<<30)
	wantCHError(t, f.chPostBlocks(t, ins, claims), 413, 307, "ingest.body_too_large", "decompressed body")
	if got := f.queuedRows(t); len(got) != 0 {
		t.Fatalf("a refused body queued %q", got)
	}
	// Within the limit, the same blocks land.
	if r := f.chPostBlocks(t, ins, good); r.status != http.StatusOK || len(f.queuedRows(t)) != 2 {
		t.Fatalf("good blocks: %d %q", r.status, r.body)
	}
}
