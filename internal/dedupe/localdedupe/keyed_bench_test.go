package localdedupe

import (
	"crypto/rand"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// prefilledRecords is how many committed records BenchmarkKeyedRequest's store holds before it
// starts: about an hour of keyed requests at a few hundred a second, flushed to sstables, so a
// Reserve of a new key has to look past the memtable the way it does in a long-running gateway.
const prefilledRecords = 300_000

// BenchmarkKeyedRequest is a keyed ingest request's dedupe path as the gateway runs it: Reserve a
// new key, Mark its claim with the frame it joins, Commit a 200-byte response; from 16×GOMAXPROCS
// goroutines, against a store that already holds prefilledRecords committed records.
func BenchmarkKeyedRequest(b *testing.B) {
	s, err := New(Config{Dir: b.TempDir()}, Deps{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(b.Context()) })
	prefill(b, s, prefilledRecords)
	body := make([]byte, 200)
	resp := dedupe.Response{Status: 202, Body: body}
	fp := rand.Text() + rand.Text()
	var seq atomic.Int64
	b.ResetTimer()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		ctx := b.Context()
		for pb.Next() {
			k := dedupe.Key{Tenant: "bench", Table: "events", ID: rand.Text() + strconv.FormatInt(seq.Add(1), 10)}
			res, err := s.Reserve(ctx, k, fp, time.Minute)
			if err != nil || res.Outcome != dedupe.OutcomeClaimed {
				b.Fatalf("Reserve = %v, %v", res.Outcome, err)
			}
			if errs := s.Mark(ctx, "frame-"+k.ID, time.Now().Add(2*time.Minute), []dedupe.Owned{{Key: k, Token: res.Claim.Token}}); errs[0] != nil {
				b.Fatalf("Mark: %v", errs[0])
			}
			if err := s.Commit(ctx, k, res.Claim.Token, resp, time.Hour); err != nil {
				b.Fatalf("Commit: %v", err)
			}
		}
	})
}

// prefill writes n committed records with random keys in batches and compacts them into
// sstables.
func prefill(b testing.TB, s *Store, n int) {
	b.Helper()
	fp := rand.Text() + rand.Text()
	val := encode(stored{State: int(dedupe.StateCommitted), Fingerprint: fp, Status: 202,
		Body: make([]byte, 200), ExpiresAt: time.Now().Add(time.Hour).UnixNano()})
	for done := 0; done < n; {
		batch := s.db.NewBatch()
		for i := 0; i < 10_000 && done < n; i++ {
			k := dedupe.Key{Tenant: "bench", Table: "events", ID: rand.Text()}
			if err := batch.Set([]byte(k.Encode()), val, nil); err != nil {
				b.Fatal(err)
			}
			done++
		}
		if err := batch.Commit(pebble.NoSync); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	// Settle the compaction debt of the bulk load, so the benchmark measures its own requests.
	if err := s.db.Compact(b.Context(), []byte{0}, []byte{0xff}, true); err != nil {
		b.Fatal(err)
	}
}
