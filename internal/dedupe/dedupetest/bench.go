package dedupetest

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// Bench runs the dedupe benchmarks against s, which must be empty of the keys it uses:
//
//   - ReserveCommit: the path of a first request (claim, then record a 200-byte response);
//   - ReserveDuplicate: the path of a retry (a Reserve that finds the committed record);
//
// each sequentially and from 16×GOMAXPROCS parallel goroutines, the way concurrent requests
// arrive.
func Bench(b *testing.B, s dedupe.Store) {
	body := make([]byte, 200)
	resp := dedupe.Response{Status: 202, Body: body}
	var seq atomic.Int64
	newKey := func() dedupe.Key {
		return dedupe.Key{Tenant: "bench", Table: "events", ID: "key-" + strconv.FormatInt(seq.Add(1), 10)}
	}
	reserveCommit := func(ctx context.Context, b *testing.B) {
		k := newKey()
		res, err := s.Reserve(ctx, k, "fp", time.Minute)
		if err != nil || res.Outcome != dedupe.OutcomeClaimed {
			b.Fatalf("Reserve = %v, %v", res.Outcome, err)
		}
		if err := s.Commit(ctx, k, res.Claim.Token, resp, time.Hour); err != nil {
			b.Fatalf("Commit: %v", err)
		}
	}
	b.Run("ReserveCommit", func(b *testing.B) {
		for b.Loop() {
			reserveCommit(b.Context(), b)
		}
	})
	b.Run("ReserveCommitParallel", func(b *testing.B) {
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				reserveCommit(b.Context(), b)
			}
		})
	})
	dup := newKey()
	res, err := s.Reserve(b.Context(), dup, "fp", time.Minute)
	if err != nil {
		b.Fatalf("Reserve: %v", err)
	}
	if err := s.Commit(b.Context(), dup, res.Claim.Token, resp, time.Hour); err != nil {
		b.Fatalf("Commit: %v", err)
	}
	reserveDup := func(ctx context.Context, b *testing.B) {
		res, err := s.Reserve(ctx, dup, "fp", time.Minute)
		if err != nil || res.Outcome != dedupe.OutcomeDuplicate {
			b.Fatalf("Reserve duplicate = %v, %v", res.Outcome, err)
		}
	}
	b.Run("ReserveDuplicate", func(b *testing.B) {
		for b.Loop() {
			reserveDup(b.Context(), b)
		}
	})
	b.Run("ReserveDuplicateParallel", func(b *testing.B) {
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				reserveDup(b.Context(), b)
			}
		})
	})
}
