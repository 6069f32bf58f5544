package request

import (
	"bytes"
	"io"

	"github.com/wavehouse/wavehouse/internal/httpx"
)

// ReadRaw reads an ingest body as sent (still compressed), refusing more than lim.MaxBodyBytes,
// for a caller that must keep the bytes: to fingerprint them, or to parse them again after a
// schema refresh ([ParseBytes]). sizeHint (the request's Content-Length, 0 when unknown) presizes
// the buffer. The buffer comes from a pool: hand it back with [ReleaseRaw] once nothing reads it,
// or leave it to the garbage collector. Its failures are the ones Parse reports for the same
// body: 413 ingest.body_too_large (http.MaxBytesReader's error included) and 400
// ingest.body_read_failed.
func ReadRaw(body io.Reader, sizeHint int64, lim Limits) ([]byte, *httpx.Error) {
	lim = lim.withDefaults()
	buf := *getBuf()
	if sizeHint > 0 && sizeHint <= lim.MaxBodyBytes && int64(cap(buf)) < sizeHint+1 {
		buf = make([]byte, 0, sizeHint+1) // +1: reading EOF needs room for one more byte
	}
	src := &bodyReader{r: body, n: lim.MaxBodyBytes + 1}
	out, over, err := readLimited(src, lim.MaxBodyBytes, buf)
	if over {
		return nil, bodyTooLarge(lim.MaxBodyBytes, false)
	}
	if err != nil {
		return nil, readErr(err, lim.MaxBodyBytes)
	}
	return out, nil
}

// ReleaseRaw hands a body read by [ReadRaw] back to its pool. Nothing may read b, or anything
// sliced from it, afterwards. What Parse returned never shares its memory.
func ReleaseRaw(b []byte) {
	if cap(b) > 0 {
		putBuf(&b)
	}
}

// Decode returns body, as sent with contentEncoding, decompressed and bounded like Parse bounds
// it: for a caller that must read the decompressed bytes itself (a ClickHouse statement in the
// body before its data). The result is then parsed with encoding identity.
func Decode(contentEncoding string, body []byte, lim Limits) ([]byte, *httpx.Error) {
	lim = lim.withDefaults()
	enc, ok := parseEncoding(contentEncoding)
	if !ok {
		return nil, unsupportedEncoding(contentEncoding)
	}
	if enc == encIdentity {
		return body, nil
	}
	src := &bodyReader{r: bytes.NewReader(body), n: lim.MaxBodyBytes + 1}
	return readBody(enc, src, lim.MaxBodyBytes, nil)
}
