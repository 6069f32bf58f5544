package request

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/wavehouse/wavehouse/internal/httpx"
)

// format is the body layout chosen by the Content-Type.
type format uint8

const (
	formatJSON format = iota + 1
	formatNDJSON
	formatCSV
	formatTSV
	// formatJSONCompact is ClickHouse's JSONCompactEachRow: one JSON array per row.
	formatJSONCompact
)

// headerMode says whether the first record of a CSV or TSV body names the columns.
type headerMode uint8

const (
	headerAuto headerMode = iota
	headerPresent
	headerAbsent
)

// bodyFormat is everything the Content-Type decides.
type bodyFormat struct {
	kind   format
	header headerMode
	// sep is the field delimiter of CSV and TSV.
	sep byte
	// types says a record of type names follows the header (ClickHouse's …WithNamesAndTypes).
	types bool
}

// parseMediaType maps a Content-Type to a format, ignoring case and, for JSON, every parameter.
// For CSV and TSV it reads the header and (CSV only) delimiter parameters; a bad value is a 415
// naming it, any other parameter (charset) is ignored.
func parseMediaType(ct string) (bodyFormat, *httpx.Error) {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	switch mt {
	case "application/json":
		return bodyFormat{kind: formatJSON}, nil
	case "application/x-ndjson", "application/ndjson", "application/jsonl", "application/jsonlines", "application/x-jsonlines":
		return bodyFormat{kind: formatNDJSON}, nil
	case "text/csv":
		return textParams(ct, bodyFormat{kind: formatCSV, sep: ','})
	case "text/tab-separated-values":
		return textParams(ct, bodyFormat{kind: formatTSV, sep: '\t'})
	}
	return bodyFormat{}, unsupportedMediaType(ct)
}

func textParams(ct string, f bodyFormat) (bodyFormat, *httpx.Error) {
	_, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return f, badMediaParam(ct, "cannot parse the media type parameters: "+err.Error())
	}
	switch h := strings.ToLower(params["header"]); h {
	case "", "auto":
	case "present":
		f.header = headerPresent
	case "absent":
		f.header = headerAbsent
	default:
		return f, badMediaParam(ct, fmt.Sprintf("header=%q: want present, absent or auto", excerpt(h, 32)))
	}
	d, ok := params["delimiter"]
	if !ok {
		return f, nil
	}
	if f.kind != formatCSV {
		return f, badMediaParam(ct, "the delimiter parameter applies to text/csv only; tab-separated values are split on tabs")
	}
	if len(d) != 1 || d[0] == '"' || d[0] == '\r' || d[0] == '\n' || d[0] >= 0x80 {
		return f, badMediaParam(ct, fmt.Sprintf("delimiter=%q: want one ASCII character other than a double quote or a line break", excerpt(d, 32)))
	}
	f.sep = d[0]
	return f, nil
}

// encoding is the Content-Encoding of the body.
type encoding uint8

const (
	encIdentity encoding = iota + 1
	encGzip
	encZstd
	encLZ4
	encDeflate
	encBrotli
)

func parseEncoding(ce string) (encoding, bool) {
	ce = strings.TrimSpace(ce)
	switch {
	case ce == "", strings.EqualFold(ce, "identity"):
		return encIdentity, true
	case strings.EqualFold(ce, "gzip"), strings.EqualFold(ce, "x-gzip"):
		return encGzip, true
	case strings.EqualFold(ce, "zstd"):
		return encZstd, true
	case strings.EqualFold(ce, "lz4"):
		return encLZ4, true
	case strings.EqualFold(ce, "deflate"):
		return encDeflate, true
	case strings.EqualFold(ce, "br"):
		return encBrotli, true
	}
	return 0, false
}

// zstdMaxWindow bounds the memory a zstd frame may make the decoder allocate for its window.
// Encoders use at most 8 MiB below level 20 and without long-distance matching.
const zstdMaxWindow = 8 << 20

// maxPooledBuffer keeps a few huge requests from pinning their buffers in the pool.
const maxPooledBuffer = 4 << 20

// The pools below are caches of reusable scratch memory, not state: nothing read from them
// depends on what an earlier call left there, so Parse stays a pure function of its inputs.
var (
	bufPool  = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}
	gzipPool sync.Pool // *gzip.Reader
	zstdPool sync.Pool // *zstd.Decoder
)

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > maxPooledBuffer {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

// readBody reads the whole body from raw, decompressed, into buf. Neither the body as sent nor
// the decompressed body may exceed limit; the buffer never grows past limit+1 bytes, so a
// compression bomb costs at most that much memory. The caller owns raw so that it can live in
// pooled memory.
func readBody(enc encoding, raw *bodyReader, limit int64, buf []byte) ([]byte, *httpx.Error) {
	switch enc {
	case encGzip:
		zr, _ := gzipPool.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(raw)
		} else {
			err = zr.Reset(raw)
		}
		if err != nil {
			return buf, compressedErr("gzip", raw, limit, err)
		}
		out, over, err := readLimited(zr, limit, buf)
		_ = zr.Close()
		gzipPool.Put(zr)
		return finish(out, over, "gzip", raw, limit, err)
	case encZstd:
		zd, _ := zstdPool.Get().(*zstd.Decoder)
		var err error
		if zd == nil {
			zd, err = zstd.NewReader(raw, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(zstdMaxWindow))
		} else {
			err = zd.Reset(raw)
		}
		if err != nil {
			if zd != nil {
				zd.Close()
			}
			return buf, compressedErr("zstd", raw, limit, err)
		}
		out, over, err := readLimited(zd, limit, buf)
		if rerr := zd.Reset(nil); rerr == nil {
			zstdPool.Put(zd)
		} else {
			zd.Close()
		}
		return finish(out, over, "zstd", raw, limit, err)
	case encLZ4, encDeflate, encBrotli:
		return readStream(enc, raw, limit, buf)
	}
	out, over, err := readLimited(raw, limit, buf)
	if over {
		return out, bodyTooLarge(limit, false)
	}
	if err != nil {
		return out, readErr(err, limit)
	}
	return out, nil
}

// readStream decodes the encodings that are rare enough to go without a pool of decoders: lz4
// (the LZ4 frame format, as ClickHouse's HTTP interface reads Content-Encoding: lz4), deflate
// (zlib, RFC 1950, as HTTP and ClickHouse mean it) and br (Brotli).
func readStream(enc encoding, raw *bodyReader, limit int64, buf []byte) ([]byte, *httpx.Error) {
	var (
		r    io.Reader
		name string
	)
	switch enc {
	case encLZ4:
		r, name = lz4.NewReader(raw), "lz4"
	case encDeflate:
		zr, err := zlib.NewReader(raw)
		if err != nil {
			return buf, compressedErr("deflate", raw, limit, err)
		}
		defer func() { _ = zr.Close() }()
		r, name = zr, "deflate"
	default:
		r, name = brotli.NewReader(raw), "br"
	}
	out, over, err := readLimited(r, limit, buf)
	return finish(out, over, name, raw, limit, err)
}

func finish(out []byte, over bool, name string, raw *bodyReader, limit int64, err error) ([]byte, *httpx.Error) {
	if raw.n <= 0 {
		return out, bodyTooLarge(limit, false)
	}
	if over {
		return out, bodyTooLarge(limit, true)
	}
	if err != nil {
		return out, compressedErr(name, raw, limit, err)
	}
	return out, nil
}

// compressedErr classifies a decompression failure: the raw body hit the limit, the body could
// not be read, or the compressed data is corrupt.
func compressedErr(name string, raw *bodyReader, limit int64, err error) *httpx.Error {
	if raw.n <= 0 {
		return bodyTooLarge(limit, false)
	}
	var se *sourceError
	if errors.As(err, &se) {
		return readErr(se.err, limit)
	}
	return corruptBody(name, err)
}

func readErr(err error, limit int64) *httpx.Error {
	var se *sourceError
	if errors.As(err, &se) {
		err = se.err
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return bodyTooLarge(limit, false)
	}
	return readFailed(err)
}

// sourceError marks an error of the underlying body reader, as opposed to a decoding error.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

// bodyReader reads the request body, at most n more bytes, and marks the body's own failures
// as *sourceError so they are told apart from decoding errors.
type bodyReader struct {
	r io.Reader
	n int64
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= int64(n)
	if err != nil && err != io.EOF {
		err = &sourceError{err}
	}
	return n, err
}

// readLimited reads r to EOF into buf. over reports that more than limit bytes were available;
// the buffer then holds limit+1 bytes and is never grown beyond that.
func readLimited(r io.Reader, limit int64, buf []byte) (out []byte, over bool, err error) {
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			n := int64(cap(buf)) * 2
			if n < 16<<10 {
				n = 16 << 10
			}
			if n > limit+1 {
				n = limit + 1
			}
			if n <= int64(cap(buf)) {
				return buf, true, nil
			}
			nb := make([]byte, len(buf), n)
			copy(nb, buf)
			buf = nb
		}
		n, rerr := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return buf, true, nil
		}
		if rerr == io.EOF {
			return buf, false, nil
		}
		if rerr != nil {
			return buf, false, rerr
		}
	}
}
