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
	var shards []uint64
	for i, c := range claims {
		keys[i] = c.Key.Encode()
		shards = append(shards, shardOf(s, keys[i]))
	}
	slices.Sort(shards)
	shards = slices.Compact(shards)
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
			sh := &s.shards[shardOf(s, keys[i])]
			cur, _, err := sh.owned(db, []byte(keys[i]), c.Token)
			if err != nil {
				errs[i] = err
				continue
			}
			cur.Frame, cur.FrameUntil = frame, until.UnixNano()
			if err := b.Set([]byte(keys[i]), encode(cur), nil); err != nil {
				errs[i] = unavailable("write mark", err)
				continue
			}
			marked[i] = cur
		}
		if b.Empty() {
			return nil
		}
		err := b.Commit(pebble.Sync)
		for i := range claims {
			if errs[i] != nil {
				continue
			}
			if err == nil {
				s.shards[shardOf(s, keys[i])].hold([]byte(keys[i]), marked[i])
			}
		}
		if err != nil {
			return unavailable("write mark", err)
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return errs
}
