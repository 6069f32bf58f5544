package request

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/ClickHouse/ch-go/compress"

	"github.com/wavehouse/wavehouse/internal/httpx"
)

// The error codes of a body in ClickHouse's compressed-block framing ([DecodeBlocks]). They are
// part of the HTTP API.
const (
	// CodeChecksumMismatch is a block whose CityHash128 checksum does not match its bytes.
	CodeChecksumMismatch = "clickhouse.checksum_mismatch"
	// CodeBadCompressedBlock is a truncated block, or one that does not decompress.
	CodeBadCompressedBlock = "clickhouse.bad_compressed_block"
)

// A compressed block is a 16-byte checksum, then a 9-byte header (method, the compressed size
// counting the header, the decompressed size; little-endian), then the compressed data.
const (
	blockChecksumSize = 16
	blockHeaderSize   = blockChecksumSize + 9
)

// DecodeBlocks returns body, a sequence of blocks in ClickHouse's compressed-block framing (as
// ClickHouse's HTTP interface reads a body sent with ?decompress=1; LZ4, ZSTD or none),
// decompressed and bounded like [Decode] bounds a body: 413 ingest.body_too_large when the
// blocks hold more than lim.MaxBodyBytes (refused from their headers, before decompressing),
// 400 clickhouse.checksum_mismatch for a block whose checksum does not match, and 400
// clickhouse.bad_compressed_block for a truncated block or one that does not decompress. The
// blocks are read by ch-go's compress.Reader, which verifies every checksum.
func DecodeBlocks(body []byte, lim Limits) ([]byte, *httpx.Error) {
	lim = lim.withDefaults()
	if herr := scanBlocks(body, lim.MaxBodyBytes); herr != nil {
		return nil, herr
	}
	src := bytes.NewReader(body)
	raw := &bodyReader{r: src, n: lim.MaxBodyBytes + 1}
	br := &blockReader{src: src, cr: compress.NewReader(raw)}
	out, over, err := readLimited(br, lim.MaxBodyBytes, nil)
	switch {
	case over:
		return nil, bodyTooLarge(lim.MaxBodyBytes, true)
	case err != nil:
		var se *sourceError
		if errors.As(err, &se) {
			return nil, readErr(se.err, lim.MaxBodyBytes)
		}
		return nil, blockErr(br.at, err)
	}
	return out, nil
}

// scanBlocks walks the block headers: the body must end at a block's end, and the declared
// decompressed sizes must fit in limit, so that no header makes the reader allocate more than
// the limit allows.
func scanBlocks(body []byte, limit int64) *httpx.Error {
	var total int64
	for off := 0; off < len(body); {
		rest := len(body) - off
		if rest < blockHeaderSize {
			return badBlock(off, fmt.Sprintf("the body ends %d bytes into the block's %d-byte header (truncated)", rest, blockHeaderSize))
		}
		size := int64(binary.LittleEndian.Uint32(body[off+blockChecksumSize+1:]))
		data := int64(binary.LittleEndian.Uint32(body[off+blockChecksumSize+5:]))
		if size < blockHeaderSize-blockChecksumSize {
			return badBlock(off, fmt.Sprintf("its compressed size %d is smaller than its own %d-byte header", size, blockHeaderSize-blockChecksumSize))
		}
		if blockChecksumSize+size > int64(rest) {
			return badBlock(off, fmt.Sprintf("it declares %d compressed bytes and the body holds %d more (truncated)", size-(blockHeaderSize-blockChecksumSize), rest-blockHeaderSize))
		}
		if total += data; total > limit {
			return bodyTooLarge(limit, true)
		}
		off += int(blockChecksumSize + size)
	}
	return nil
}

// blockReader ends the stream cleanly where the body ends between two blocks, and records
// where the block being read starts.
type blockReader struct {
	src *bytes.Reader
	cr  *compress.Reader
	at  int64
}

func (b *blockReader) Read(p []byte) (int, error) {
	before := b.src.Size() - int64(b.src.Len())
	n, err := b.cr.Read(p)
	if err == nil {
		return n, nil
	}
	if errors.Is(err, io.EOF) && b.src.Size()-int64(b.src.Len()) == before {
		// Not one byte of a next block: the body ended at a block's end.
		return n, io.EOF
	}
	b.at = before
	return n, err
}

// blockErr is ClickHouse's error for a block that cannot be read.
func blockErr(at int64, err error) *httpx.Error {
	var ce *compress.CorruptedDataErr
	if errors.As(err, &ce) {
		return fail(http.StatusBadRequest, CodeChecksumMismatch,
			"Checksum doesn't match: corrupted data: the compressed block at byte offset %d (%d compressed bytes) has checksum %s, its bytes hash to %s; nothing was read",
			at, ce.RawSize, compress.FormatU128(ce.Reference), compress.FormatU128(ce.Actual))
	}
	return badBlock(int(at), err.Error())
}

func badBlock(at int, why string) *httpx.Error {
	return fail(http.StatusBadRequest, CodeBadCompressedBlock,
		"Cannot decompress the body (?decompress=1, ClickHouse's compressed blocks): the block at byte offset %d: %s; nothing was read", at, why)
}
