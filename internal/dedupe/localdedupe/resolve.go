package localdedupe

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// Commits resolved from the queue (Config.ResolveFromQueue; docs/adr/0017). Commit then writes
// without waiting for an fsync, and a background sync makes it durable within Config.SyncInterval. A
// crash can lose the commits of the last interval; their claims are left as Mark wrote them,
// fsynced, with their queue frame. So Mark also writes a mark index entry per claim, which
// Commit deletes, and ResolveMarks, run at every open before the store serves, asks the queue
// which of the frames the index lists are stored: a frame stored with the claim's request turns
// the claim into a resolved one (its frame id recorded with the position), which the next
// attempt takes as its answer without publishing again.
//
// Keys outside the records: records start with an escaped tenant (valid UTF-8), so a 0xff
// first byte never names one.
const (
	// markIndexPrefix + 8 bytes of FrameUntil (Unix nanoseconds, big endian) + the record key.
	markIndexPrefix = "\xffm"
	// syncedKey holds the time of the last background sync (8 bytes, Unix nanoseconds): every
	// write applied before it was written is durable.
	syncedKey = "\xffs"
	// markIndexEnd bounds the mark index from above.
	markIndexEnd = "\xffn"
	// recordsEnd bounds the records' key range from above.
	recordsEnd = "\xff"
)

// DefaultSyncInterval is how often a store with ResolveFromQueue fsyncs unless
// Config.SyncInterval says otherwise: a commit is durable within it.
const DefaultSyncInterval = 100 * time.Millisecond

// DefaultResolveMargin bounds how long after its mark's FrameUntil a commit can be written:
// the time a request takes from its Reserve, which inherits a mark only before its FrameUntil,
// to its Commit (a fence and a publish, each bounded by the queue's publish timeout). A request
// that waits for its rows (?wait=committed) commits up to ingest.wait_timeout later still,
// which the app adds (Config.ResolveMargin). ResolveMarks looks at the marks whose FrameUntil is
// at most the margin before the last sync, and the sweeper keeps every frame for the duplicate
// window plus the margin, so the frame of a lost commit, and the messages after its bound, are
// still stored when the store resolves it.
const DefaultResolveMargin = 5 * time.Minute

// Unresolved is a marked claim whose commit the store may have lost, for ResolveFunc.
type Unresolved struct {
	// Tenant and Table are the request's.
	Tenant, Table string
	// Frame is the queue frame the claim was marked with.
	Frame string
	// QueueKey is the request's identity in the queue (dedupe.QueueKey).
	QueueKey string
}

// ResolveFunc tells, for each claim, the frame to record when the queue stored the claim's
// request (the frame id with its position; a later attempt's Claim.Frame), or "" when it
// cannot tell or did not store it.
type ResolveFunc func(ctx context.Context, claims []Unresolved) ([]string, error)

func indexKey(until int64, k []byte) []byte {
	b := make([]byte, 0, len(markIndexPrefix)+8+len(k))
	b = append(b, markIndexPrefix...)
	b = binary.BigEndian.AppendUint64(b, uint64(until))
	return append(b, k...)
}

// indexMark adds the index entry of claim key, marked with frame until until, to b, and
// deletes the entry of the mark it replaces (prev, prevUntil) if any.
func (s *Store) indexMark(b *pebble.Batch, key dedupe.Key, k []byte, cur stored, frame string, until int64) error {
	if !s.resolving {
		return nil
	}
	if cur.Frame != "" {
		if err := deleteIndexEntry(b, cur.FrameUntil, k); err != nil {
			return err
		}
	}
	v := indexEntry{Tenant: key.Tenant, Table: key.Table, Frame: frame,
		QueueKey: dedupe.QueueKey(key, cur.Fingerprint), Fingerprint: cur.Fingerprint}.encode()
	return b.Set(indexKey(until, k), v, nil)
}

// deleteIndexEntry adds the deletion of the index entry of k marked until until to b. An
// entry is set once (its key holds the mark's end, in nanoseconds), so a single delete is
// enough, and Pebble drops it together with the set when both meet in a flush or a
// compaction, where a plain delete's tombstone would be carried down every level: most
// entries are set and deleted within milliseconds, in the same memtable. Were an entry ever set
// twice, the older set would be left, and a stale entry only costs ResolveMarks a look
// (it skips an entry whose record moved on) until trimIndex removes it.
func deleteIndexEntry(b *pebble.Batch, until int64, k []byte) error {
	return b.SingleDelete(indexKey(until, k), nil)
}

// commitOptions is how Commit writes: without waiting for an fsync when commits are resolved
// from the queue.
func (s *Store) commitOptions() *pebble.WriteOptions {
	if s.resolving {
		return pebble.NoSync
	}
	return pebble.Sync
}

// readSynced returns the time of the last background sync, zero when none is stored.
func readSynced(db *pebble.DB) (time.Time, error) {
	v, closer, err := db.Get([]byte(syncedKey))
	if errors.Is(err, pebble.ErrNotFound) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, unavailable("read sync time", err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return time.Time{}, nil
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))), nil
}

// syncLoop makes unsynced commits durable every interval until stop closes.
func (s *Store) syncLoop(interval time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if !s.unsynced.Swap(false) {
				// No commit since the last sync: nothing to make durable. The stored time then
				// lags, which only widens what a boot resolves.
				continue
			}
			if err := s.syncNow(); err != nil && !errors.Is(err, dedupe.ErrClosed) {
				s.unsynced.Store(true)
				s.log.Warn("dedupe: background sync failed", "error", err)
			}
		}
	}
}

// syncNow records the time and fsyncs: every write applied before is durable. The time is
// taken before the write, so a commit applied after it is never covered by a later time.
func (s *Store) syncNow() error {
	return s.withDB(context.Background(), func(db *pebble.DB) error {
		v := binary.BigEndian.AppendUint64(nil, uint64(s.clock.Now().UnixNano()))
		if err := db.Set([]byte(syncedKey), v, pebble.Sync); err != nil {
			return unavailable("sync", err)
		}
		return nil
	})
}

// ResolveMarks resolves the marked claims whose commit a crash may have lost (those in the mark
// index whose FrameUntil is at most Config.ResolveMargin before the last sync before this open) with
// resolve, and returns how many it resolved. It must run before the store serves, in the
// process that published their frames, with nothing of an earlier process left that could
// still store one. A claim resolve cannot tell about is left as it is.
func (s *Store) ResolveMarks(ctx context.Context, resolve ResolveFunc, retention func(tenant string) time.Duration) (int, error) {
	var (
		keys    [][]byte
		idxKeys [][]byte
		claims  []Unresolved
		recs    []stored
	)
	err := s.withDB(ctx, func(db *pebble.DB) error {
		from := int64(0)
		if !s.synced.IsZero() {
			from = s.synced.Add(-s.margin).UnixNano()
		}
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: indexKey(max(from, 0), nil), UpperBound: []byte(markIndexEnd)})
		if err != nil {
			return unavailable("iterate marks", err)
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			ik := it.Key()
			if len(ik) <= len(markIndexPrefix)+8 {
				continue
			}
			e, err := decodeIndexEntry(it.Value())
			if err != nil {
				continue
			}
			k := append([]byte(nil), ik[len(markIndexPrefix)+8:]...)
			cur, found, err := get(db, k)
			if err != nil {
				return err
			}
			if !found || cur.State != int(dedupe.StatePending) || cur.Frame != e.Frame || cur.Fingerprint != e.Fingerprint {
				continue // a stale entry: the record moved on
			}
			keys = append(keys, k)
			idxKeys = append(idxKeys, append([]byte(nil), ik...))
			claims = append(claims, Unresolved{Tenant: e.Tenant, Table: e.Table, Frame: e.Frame, QueueKey: e.QueueKey})
			recs = append(recs, cur)
		}
		return it.Error()
	})
	if err != nil || len(claims) == 0 {
		return 0, err
	}
	frames, err := resolve(ctx, claims)
	if err != nil {
		return 0, fmt.Errorf("resolve marked claims from the queue: %w", err)
	}
	if len(frames) != len(claims) {
		return 0, fmt.Errorf("resolve marked claims: %d answers for %d claims", len(frames), len(claims))
	}
	resolved := 0
	err = s.withDB(ctx, func(db *pebble.DB) error {
		b := db.NewBatch()
		defer b.Close()
		now := s.clock.Now()
		for i, f := range frames {
			if f == "" || f == claims[i].Frame {
				continue
			}
			cur := recs[i]
			cur.Frame, cur.Resolved = f, true
			cur.FrameUntil = max(cur.FrameUntil, now.Add(retention(claims[i].Tenant)).UnixNano())
			if err := b.Set(keys[i], encode(cur), nil); err != nil {
				return unavailable("write resolved claim", err)
			}
			if err := b.Delete(idxKeys[i], nil); err != nil {
				return unavailable("write resolved claim", err)
			}
			resolved++
		}
		if b.Empty() {
			return nil
		}
		if err := b.Commit(pebble.Sync); err != nil {
			return unavailable("write resolved claims", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	s.log.Info("dedupe: resolved marked claims from the queue", "looked_at", len(claims), "resolved", resolved)
	return resolved, nil
}

// trimIndex deletes the mark index entries no later ResolveMarks looks at: FrameUntil more than
// margin before now, and so before any later sync.
func trimIndex(db *pebble.DB, now time.Time, margin time.Duration) error {
	end := indexKey(now.Add(-margin).UnixNano(), nil)
	if bytes.Compare(end, []byte(markIndexPrefix)) <= 0 {
		return nil
	}
	if err := db.DeleteRange([]byte(markIndexPrefix), end, pebble.NoSync); err != nil {
		return unavailable("trim mark index", err)
	}
	return nil
}
