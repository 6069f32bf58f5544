package jsmq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wavehouse/wavehouse/internal/binread"
	"github.com/wavehouse/wavehouse/internal/mq"
)

// frameMagic starts every encoded frame (format version 1).
const frameMagic = 0xF1

// errBadFrame reports a stored message that is not a valid frame.
var errBadFrame = errors.New("mq: malformed frame")

// recordSize is the encoded size bound of one record inside a frame.
func recordSize(r *mq.Record) int {
	n := 10 + 5 + len(r.IdempotencyKey) + 5 + 5 + len(r.Payload)
	for k, v := range r.Headers {
		n += 10 + len(k) + len(v)
	}
	return n
}

// appendFrame encodes records (all of one tenant/table; tenant and table
// travel in the subject) as one frame. dst grows at most once, to the
// records' size bound, so each payload is copied exactly once.
func appendFrame(dst []byte, recs []*mq.Record) []byte {
	n := 1 + binary.MaxVarintLen64
	for _, r := range recs {
		n += recordSize(r)
	}
	dst = slices.Grow(dst, n)
	dst = append(dst, frameMagic)
	dst = binary.AppendUvarint(dst, uint64(len(recs)))
	for _, r := range recs {
		var ns int64
		if !r.AcceptedAt.IsZero() {
			ns = r.AcceptedAt.UnixNano()
		}
		dst = binary.AppendVarint(dst, ns)
		dst = appendString(dst, r.IdempotencyKey)
		dst = binary.AppendUvarint(dst, uint64(len(r.Headers)))
		for k, v := range r.Headers {
			dst = appendString(dst, k)
			dst = appendString(dst, v)
		}
		dst = binary.AppendUvarint(dst, uint64(len(r.Payload)))
		dst = append(dst, r.Payload...)
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decodeFrame decodes a frame stored at seq. The records' payloads alias
// data.
func decodeFrame(data []byte, tenant, table string, seq uint64) ([]mq.Record, error) {
	if len(data) == 0 || data[0] != frameMagic {
		return nil, fmt.Errorf("%w at sequence %d", errBadFrame, seq)
	}
	d := binread.Reader{B: data[1:]}
	n := d.Uvarint()
	if d.Err != nil || n > uint64(len(data)) {
		return nil, fmt.Errorf("%w at sequence %d", errBadFrame, seq)
	}
	recs := make([]mq.Record, 0, n)
	for i := uint64(0); i < n; i++ {
		r := mq.Record{Tenant: tenant, Table: table, Position: mq.Position{Seq: seq, Index: uint32(i)}}
		if ns := d.Varint(); ns != 0 {
			r.AcceptedAt = time.Unix(0, ns).UTC()
		}
		r.IdempotencyKey = string(d.Bytes())
		nh := d.Uvarint()
		if nh > uint64(len(data)) {
			return nil, fmt.Errorf("%w at sequence %d", errBadFrame, seq)
		}
		if nh > 0 {
			r.Headers = make(map[string]string, nh)
			for j := uint64(0); j < nh; j++ {
				k := string(d.Bytes())
				r.Headers[k] = string(d.Bytes())
			}
		}
		r.Payload = d.Bytes()
		if d.Err != nil {
			return nil, fmt.Errorf("%w at sequence %d", errBadFrame, seq)
		}
		recs = append(recs, r)
	}
	return recs, nil
}
