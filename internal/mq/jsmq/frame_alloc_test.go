// The race detector's instrumentation allocates on its own, so the count is exact only without it.

//go:build !race

package jsmq

import (
	"testing"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// TestFrameCopiesOnce: a frame is allocated once, at its size bound, so each record's payload
// is copied into it exactly once (no regrowth while records are appended).
func TestFrameCopiesOnce(t *testing.T) {
	recs := make([]*mq.Record, 64)
	for i := range recs {
		recs[i] = &mq.Record{Payload: make([]byte, 10_000+i), IdempotencyKey: "k"}
	}
	if n := testing.AllocsPerRun(20, func() { _ = appendFrame(nil, recs) }); n != 1 {
		t.Fatalf("appendFrame made %v allocations, want 1", n)
	}
}
