package localdedupe

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wavehouse/wavehouse/internal/binread"
	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// Stored value layouts. Version 1 is JSON (a value starting with '{'), written before
// version 2 and still read; version 2, written now, is binary: the byte 2, then each field in
// stored's order as a varint or a length-prefixed string, with a fingerprint of 64 lower-case
// hex digits packed into its 32 bytes. A keyed request writes Pebble three times (mark, index
// entry, commit) and every byte is compacted again at each level, so the smaller layout is
// measured CPU (docs/benchmarks.md "W13: keyed records in binary"). A value of any other
// version is treated as corrupt rather than guessed at.
const (
	recordVersionJSON   = 1
	recordVersionBinary = 2
)

// stored is the value kept under each key. Times are Unix nanoseconds.
type stored struct {
	Version     int    `json:"v"`
	State       int    `json:"s"`
	Token       string `json:"t,omitempty"`
	Fingerprint string `json:"f"`
	LeaseUntil  int64  `json:"l,omitempty"`
	ExpiresAt   int64  `json:"e,omitempty"`
	Status      int    `json:"c,omitempty"`
	Body        []byte `json:"b,omitempty"`
	Frame       string `json:"fr,omitempty"`
	FrameUntil  int64  `json:"fu,omitempty"`
	// Resolved marks a claim ResolveMarks found stored by the queue: it answers like a
	// committed record would, so another request reusing the key is refused.
	Resolved bool `json:"rs,omitempty"`
}

func (s stored) record() dedupe.Record {
	rec := dedupe.Record{
		State:       dedupe.State(s.State),
		Fingerprint: s.Fingerprint,
		Response:    dedupe.Response{Status: s.Status, Body: s.Body},
	}
	if s.LeaseUntil != 0 {
		rec.LeaseUntil = time.Unix(0, s.LeaseUntil)
	}
	if s.ExpiresAt != 0 {
		rec.ExpiresAt = time.Unix(0, s.ExpiresAt)
	}
	if s.Frame != "" {
		rec.Frame, rec.FrameUntil = s.Frame, time.Unix(0, s.FrameUntil)
	}
	return rec
}

// errBadValue reports a stored value that is not a valid binary record or index entry.
var errBadValue = errors.New("malformed value")

func decode(b []byte) (stored, error) {
	if len(b) > 0 && b[0] == '{' {
		var s stored
		if err := json.Unmarshal(b, &s); err != nil {
			return stored{}, fmt.Errorf("decode record: %w", err)
		}
		if s.Version != recordVersionJSON {
			return stored{}, fmt.Errorf("decode record: unknown version %d", s.Version)
		}
		return s, nil
	}
	if len(b) == 0 || b[0] != recordVersionBinary {
		return stored{}, fmt.Errorf("decode record: unknown version")
	}
	r := reader{binread.Reader{B: b[1:]}}
	s := stored{Version: recordVersionBinary}
	s.State = int(r.Uvarint())
	s.Token = r.str()
	s.Fingerprint = r.fingerprint()
	s.LeaseUntil = r.Varint()
	s.ExpiresAt = r.Varint()
	s.Status = int(r.Uvarint())
	if body := r.Bytes(); len(body) > 0 {
		s.Body = append([]byte(nil), body...)
	}
	s.Frame = r.str()
	s.FrameUntil = r.Varint()
	s.Resolved = r.Uvarint() == 1
	if r.Err != nil || len(r.B) != 0 {
		return stored{}, fmt.Errorf("decode record: %w", errBadValue)
	}
	return s, nil
}

func encode(s stored) []byte {
	b := make([]byte, 0, 1+6*binary.MaxVarintLen64+len(s.Token)+len(s.Fingerprint)+len(s.Body)+len(s.Frame)+8)
	b = append(b, recordVersionBinary)
	b = binary.AppendUvarint(b, uint64(s.State))
	b = appendStr(b, s.Token)
	b = appendFingerprint(b, s.Fingerprint)
	b = binary.AppendVarint(b, s.LeaseUntil)
	b = binary.AppendVarint(b, s.ExpiresAt)
	b = binary.AppendUvarint(b, uint64(s.Status))
	b = appendStr(b, s.Body)
	b = appendStr(b, s.Frame)
	b = binary.AppendVarint(b, s.FrameUntil)
	resolved := uint64(0)
	if s.Resolved {
		resolved = 1
	}
	return binary.AppendUvarint(b, resolved)
}

// indexEntry is the value of a mark index entry: what the queue needs to find the claim's
// request. Written as the byte 2 and its fields as length-prefixed strings (version 1 was
// JSON, still read).
type indexEntry struct {
	Tenant   string `json:"t"`
	Table    string `json:"b"`
	Frame    string `json:"f"`
	QueueKey string `json:"q"`
	// Fingerprint is the marked request's: a record that another request (another body reusing
	// the key) took over since is not that request's any more.
	Fingerprint string `json:"p"`
}

func (e indexEntry) encode() []byte {
	b := make([]byte, 0, 1+5*binary.MaxVarintLen32+len(e.Tenant)+len(e.Table)+len(e.Frame)+len(e.QueueKey)+len(e.Fingerprint))
	b = append(b, recordVersionBinary)
	for _, s := range [...]string{e.Tenant, e.Table, e.Frame, e.QueueKey} {
		b = appendStr(b, s)
	}
	return appendFingerprint(b, e.Fingerprint)
}

func decodeIndexEntry(b []byte) (indexEntry, error) {
	var e indexEntry
	if len(b) > 0 && b[0] == '{' {
		err := json.Unmarshal(b, &e)
		return e, err
	}
	if len(b) == 0 || b[0] != recordVersionBinary {
		return e, errBadValue
	}
	r := reader{binread.Reader{B: b[1:]}}
	e.Tenant, e.Table, e.Frame, e.QueueKey = r.str(), r.str(), r.str(), r.str()
	e.Fingerprint = r.fingerprint()
	if r.Err != nil || len(r.B) != 0 {
		return indexEntry{}, errBadValue
	}
	return e, nil
}

// appendStr appends s, a string or a byte slice (a body, not converted to a string first), with
// its length before it.
func appendStr[S string | []byte](b []byte, s S) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendFingerprint writes fp as the byte 1 and its 32 bytes when it is 64 lower-case hex
// digits (what the api sends: a hex SHA-256), else as the byte 0 and the string.
func appendFingerprint(b []byte, fp string) []byte {
	if len(fp) == 2*32 && isLowerHex(fp) {
		if packed, err := hex.AppendDecode(append(b, 1), []byte(fp)); err == nil {
			return packed
		}
	}
	return appendStr(append(b, 0), fp)
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// reader decodes the binary layouts; the first error sticks.
type reader struct {
	binread.Reader
}

func (r *reader) str() string { return string(r.Bytes()) }

func (r *reader) fingerprint() string {
	switch flag := r.Fixed(1); {
	case r.Err != nil:
		return ""
	case flag[0] == 1:
		if packed := r.Fixed(32); r.Err == nil {
			return hex.EncodeToString(packed)
		}
		return ""
	default:
		return r.str()
	}
}
