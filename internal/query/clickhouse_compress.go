package query

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/ClickHouse/ch-go/compress"
)

// responseBlockSize is the most a response block holds decompressed: ClickHouse's buffer size
// (DBMS_DEFAULT_BUFFER_SIZE, 1 MiB). A flush ends a block early.
const responseBlockSize = 1 << 20

// blockMethod reads network_compression_method, the method of compress=1's blocks.
func blockMethod(s string) (compress.Method, bool) {
	switch strings.ToUpper(s) {
	case "LZ4":
		return compress.LZ4, true
	case "LZ4HC":
		return compress.LZ4HC, true
	case "ZSTD":
		return compress.ZSTD, true
	case "NONE":
		return compress.None, true
	}
	return 0, false
}

// blockWriter writes a response of compress=1 in ClickHouse's compressed-block framing, as
// ClickHouse's HTTP interface does, so that clickhouse-go with LZ4 or ZSTD compression reads
// it: blocks of at most responseBlockSize bytes, one ended at every flush, each with its
// CityHash128 checksum (ch-go's compress.Writer). A mid-stream exception is written into the
// blocks like the data before it. An error answered before any data (status 400 and up) is
// sent as plain text, which clickhouse-go reads too (it tries the blocks, then the text).
type blockWriter struct {
	w     http.ResponseWriter
	cw    *compress.Writer
	buf   []byte
	plain bool
	sent  bool
}

func newBlockWriter(w http.ResponseWriter, m compress.Method) *blockWriter {
	return &blockWriter{w: w, cw: compress.NewWriter(compress.LevelZero, m)}
}

func (b *blockWriter) Header() http.Header { return b.w.Header() }

func (b *blockWriter) WriteHeader(status int) {
	if b.sent {
		return
	}
	b.sent = true
	if status >= http.StatusBadRequest {
		b.plain = true
	} else {
		// The length of the blocks is not the length of the body the writer set.
		b.w.Header().Del("Content-Length")
	}
	b.w.WriteHeader(status)
}

func (b *blockWriter) Write(p []byte) (int, error) {
	if !b.sent {
		b.WriteHeader(http.StatusOK)
	}
	if b.plain {
		return b.w.Write(p)
	}
	n := 0
	for len(p) > 0 {
		k := min(responseBlockSize-len(b.buf), len(p))
		b.buf = append(b.buf, p[:k]...)
		p, n = p[k:], n+k
		if len(b.buf) == responseBlockSize {
			if err := b.emit(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// emit writes the pending bytes as one block.
func (b *blockWriter) emit() error {
	if len(b.buf) == 0 {
		return nil
	}
	if err := b.cw.Compress(b.buf); err != nil {
		return fmt.Errorf("query: compress a response block: %w", err)
	}
	b.buf = b.buf[:0]
	_, err := b.w.Write(b.cw.Data)
	return err
}

// FlushError ends the pending block and flushes it to the client (http.ResponseController).
func (b *blockWriter) FlushError() error {
	if err := b.emit(); err != nil {
		return err
	}
	return http.NewResponseController(b.w).Flush()
}

// Unwrap lets http.ResponseController reach the connection's other controls.
func (b *blockWriter) Unwrap() http.ResponseWriter { return b.w }

// close writes what is pending; the response is complete after it.
func (b *blockWriter) close() { _ = b.emit() }
