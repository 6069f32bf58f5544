package mq

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Position identifies one record: the stream sequence of the frame (stored
// message) that carries it and the record's index inside that frame. Within
// one tenant/table, positions are totally ordered by (Seq, Index); the SSE
// event id is Position.String.
type Position struct {
	Seq   uint64
	Index uint32
}

// Latest, given to Replay as the position to start after, means "only
// records published from now on".
var Latest = Position{Seq: ^uint64(0), Index: ^uint32(0)}

// IsZero reports whether p is the zero position, which sorts before every
// record.
func (p Position) IsZero() bool { return p.Seq == 0 && p.Index == 0 }

// Less reports whether p orders before q.
func (p Position) Less(q Position) bool {
	return p.Seq < q.Seq || (p.Seq == q.Seq && p.Index < q.Index)
}

// String formats p as "seq-index", the form ParsePosition reads back.
func (p Position) String() string {
	return strconv.FormatUint(p.Seq, 10) + "-" + strconv.FormatUint(uint64(p.Index), 10)
}

// ParsePosition parses "seq-index" or a bare "seq" (index 0).
func ParsePosition(s string) (Position, error) {
	seqStr, idxStr, hasIdx := strings.Cut(s, "-")
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	if err != nil {
		return Position{}, fmt.Errorf("%w: position %q", ErrInvalid, s)
	}
	var idx uint64
	if hasIdx {
		idx, err = strconv.ParseUint(idxStr, 10, 32)
		if err != nil {
			return Position{}, fmt.Errorf("%w: position %q", ErrInvalid, s)
		}
	}
	return Position{Seq: seq, Index: uint32(idx)}, nil
}

// PartitionOf maps a tenant/table to one of n partitions with a stable hash
// (FNV-1a over tenant, a zero byte, table), so all records of a table share
// one partition and keep their order. It returns 0 when n <= 1.
func PartitionOf(tenant, table string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(tenant))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(table))
	return int(h.Sum32() % uint32(n))
}
