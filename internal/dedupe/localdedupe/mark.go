package localdedupe

import (
	"context"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// Mark implements dedupe.Store: every owned claim is rewritten with the frame in one Pebble
// batch, committed with one fsync, under the mutexes of all the claims' shards (taken in shard
// order, so concurrent Marks cannot deadlock).
func (s *Store) Mark(ctx context.Context, frame string, until time.Time, claims []dedupe.Owned) []error {
	errs := make([]error, len(claims))
	fail := func(err error) []error {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return errs
	}
	if err := dedupe.CheckMark(frame, claims); err != nil {
		return fail(err)
	}
	keys := make([]string, len(claims))
	of := make([]uint64, len(claims)) // the shard of each claim
	for i, c := range claims {
		keys[i] = c.Key.Encode()
		of[i] = shardOf(s, keys[i])
	}
	shards := slices.Compact(slices.Sorted(slices.Values(of)))
	err := s.withDB(ctx, func(db *pebble.DB) error {
		for _, sh := range shards {
			s.shards[sh].mu.Lock()
		}
		defer func() {
			for _, sh := range shards {
				s.shards[sh].mu.Unlock()
			}
		}()
		b := db.NewBatch()
		defer b.Close()
		marked := make([]stored, len(claims))
		for i, c := range claims {
			cur, _, err := s.shards[of[i]].owned(db, []byte(keys[i]), c.Token)
			if err != nil {
				errs[i] = err
				continue
			}
			if err := s.indexMark(b, c.Key, []byte(keys[i]), cur, frame, until.UnixNano()); err != nil {
				errs[i] = unavailable("write mark", err)
				continue
			}
			cur.Frame, cur.FrameUntil, cur.Resolved = frame, until.UnixNano(), false
			if err := b.Set([]byte(keys[i]), encode(cur), nil); err != nil {
				errs[i] = unavailable("write mark", err)
				continue
			}
			marked[i] = cur
		}
		if b.Empty() {
			return nil
		}
		if err := b.Commit(pebble.Sync); err != nil {
			return unavailable("write mark", err)
		}
		for i := range claims {
			if errs[i] == nil {
				s.shards[of[i]].hold([]byte(keys[i]), marked[i])
			}
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return errs
}
