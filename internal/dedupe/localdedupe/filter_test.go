package localdedupe

import (
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// TestNewKeysAreAnsweredByTheFilter: a Reserve of a key stored nowhere is answered by the Bloom
// filters, the bottom level's included, rather than by reading data blocks.
func TestNewKeysAreAnsweredByTheFilter(t *testing.T) {
	s := newTestStore(t, nil)
	prefill(t, s, 20_000)
	if n := s.db.Metrics().Levels[6].TablesCount; n == 0 {
		t.Fatalf("no table in L6 after a full compaction")
	}
	before := s.db.Metrics().Filter
	const lookups = 1000
	for range lookups {
		k := dedupe.Key{Tenant: "bench", Table: "events", ID: rand.Text()} // within the stored keys' range, so the table is consulted
		if res, err := s.Reserve(t.Context(), k, "fp", time.Minute); err != nil || res.Outcome != dedupe.OutcomeClaimed {
			t.Fatalf("Reserve = %v, %v", res.Outcome, err)
		}
	}
	after := s.db.Metrics().Filter
	if hits := after.Hits - before.Hits; hits < lookups*9/10 {
		t.Fatalf("the filters answered %d of %d lookups of new keys (misses %d), want nearly all", hits, lookups, after.Misses-before.Misses)
	}
}

// TestLookupsHitTheBlockCache: the filter and index blocks a lookup reads stay in the block
// cache. Pebble charges its memtables to the same cache, so a cache no larger than them holds
// no block at all and every lookup reads the disk.
func TestLookupsHitTheBlockCache(t *testing.T) {
	s := newTestStore(t, nil)
	prefill(t, s, 100_000)
	before := s.db.Metrics().BlockCache
	const lookups = 1000
	for range lookups {
		k := dedupe.Key{Tenant: "bench", Table: "events", ID: rand.Text()}
		if _, err := s.Get(t.Context(), k); !errors.Is(err, dedupe.ErrNotFound) {
			t.Fatalf("Get of a new key = %v, want ErrNotFound", err)
		}
	}
	after := s.db.Metrics().BlockCache
	hits, misses := after.Hits-before.Hits, after.Misses-before.Misses
	if hits < 9*misses || hits < lookups {
		t.Fatalf("block cache: %d hits, %d misses over %d lookups (%d blocks cached), want nearly all hits", hits, misses, lookups, after.Count)
	}
}
