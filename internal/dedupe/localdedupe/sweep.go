package localdedupe

import (
	"context"
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// sweepChunk is how many expired keys a sweep collects from one iterator before deleting
// them, bounding both memory and the time a single iterator pins old data.
const sweepChunk = 1024

// Sweep implements dedupe.Sweeper: it deletes every record expired at now. Each deletion
// re-reads the record under its key's mutex, so a key claimed or committed again while the
// sweep runs is kept. It first ends this Store's claims whose lease lapsed (shard.prune).
func (s *Store) Sweep(ctx context.Context, now time.Time) (int, error) {
	removed := s.prune(now)
	if err := s.withDB(ctx, func(db *pebble.DB) error { return trimIndex(db, now, s.margin) }); err != nil {
		return removed, err
	}
	var after []byte
	for {
		var expired [][]byte
		var more bool
		err := s.withDB(ctx, func(db *pebble.DB) error {
			var err error
			expired, more, err = scanExpired(db, after, now)
			return err
		})
		if err != nil {
			return removed, err
		}
		for _, k := range expired {
			n, err := s.deleteIfExpired(ctx, k, now)
			removed += n
			if err != nil {
				return removed, err
			}
		}
		if !more {
			return removed, nil
		}
		after = expired[len(expired)-1]
	}
}

// scanExpired returns up to sweepChunk expired keys after the key after (from the start when
// nil), and whether the scan stopped early.
func scanExpired(db *pebble.DB, after []byte, now time.Time) ([][]byte, bool, error) {
	opts := &pebble.IterOptions{UpperBound: []byte(recordsEnd)}
	if after != nil {
		opts.LowerBound = append(append([]byte(nil), after...), 0)
	}
	it, err := db.NewIter(opts)
	if err != nil {
		return nil, false, unavailable("iterate", err)
	}
	var keys [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		cur, err := decode(it.Value())
		if err == nil && cur.record().Kept(now) {
			continue
		}
		// Undecodable values are swept too: nothing can read them.
		keys = append(keys, append([]byte(nil), it.Key()...))
		if len(keys) == sweepChunk {
			break
		}
	}
	more := len(keys) == sweepChunk
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, false, unavailable("iterate", err)
	}
	return keys, more, nil
}

func (s *Store) deleteIfExpired(ctx context.Context, k []byte, now time.Time) (int, error) {
	deleted := 0
	err := s.withDB(ctx, func(db *pebble.DB) error {
		sh := &s.shards[shardOf(s, string(k))]
		sh.mu.Lock()
		defer sh.mu.Unlock()
		if _, mine := sh.pending[string(k)]; mine {
			// One of this Store's claims is the key's record; prune ends it when it lapses.
			return nil
		}
		val, closer, err := db.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			return nil
		}
		if err != nil {
			return unavailable("read", err)
		}
		cur, decErr := decode(val)
		_ = closer.Close()
		if decErr == nil && cur.record().Kept(now) {
			return nil
		}
		if err := db.Delete(k, pebble.NoSync); err != nil {
			return unavailable("delete expired", err)
		}
		deleted = 1
		return nil
	})
	return deleted, err
}
