// Package localdedupe is the embedded dedupe backend: idempotency records in a Pebble database
// on local disk, for a single process.
//
// Reserve, Commit and Release read and rewrite a record under a per-key mutex (one of a fixed
// set of shards), so they are atomic within the process; the database directory is locked, so
// only one process can open it. That also makes the Store the only writer, so it keeps its
// claims in memory and writes one to Pebble only when a queue frame marks it (shard). Commit and
// Mark write with fsync, so a recorded response and a mark survive a crash; releases are not
// fsynced, because a claim lost in a crash died with the request that held it.
package localdedupe

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

const shardCount = 256

var (
	_ dedupe.Store   = (*Store)(nil)
	_ dedupe.Sweeper = (*Store)(nil)
)

// Store is the Pebble-backed dedupe.Store. It also implements dedupe.Sweeper.
type Store struct {
	clock  dedupe.Clock
	seed   maphash.Seed
	shards [shardCount]shard
	log    *slog.Logger

	// resolving is Config.ResolveFromQueue and margin its ResolveMargin; synced is the time
	// of the last background sync before this open (readSynced), which ResolveMarks starts
	// from; stopSync and syncDone stop the background sync (nil without resolving).
	resolving bool
	margin    time.Duration
	synced    time.Time
	stopSync  chan struct{}
	syncDone  chan struct{}
	stopOnce  sync.Once
	// unsynced is set by a commit written without fsync, cleared by the background sync.
	unsynced atomic.Bool

	// mu guards db against Close: calls hold it shared, Close exclusively, because Pebble
	// must not be used after it is closed.
	mu       sync.RWMutex
	db       *pebble.DB
	closed   bool
	closeErr error
}

// blockCacheSize is Pebble's block cache. Pebble charges its memtables (4 MiB each, two while
// one flushes) to the same cache, so its 8 MiB default holds no block at all once the store has
// seen a few megabytes of writes and every lookup reads its filter and index blocks from disk
// (TestLookupsHitTheBlockCache). 32 MiB leaves about 24 MiB for blocks, by estimate (10 filter
// bits and a share of an index entry, about 6 bytes a key) the filter and index blocks of some
// 4 million stored keys. It is allocated as blocks are read, not up front.
const blockCacheSize = 32 << 20

// New opens (creating if needed) the Pebble database in cfg.Dir.
//
// Unlike most constructors in this repository, New opens the database: Pebble starts its own
// background goroutines when it opens, and Close stops them. There is no other background
// work, so the store has no Run method.
func New(cfg Config, deps Deps) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	clock := deps.Clock
	if clock == nil {
		clock = dedupe.SystemClock{}
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Bloom filters on every level (getOptions uses them on the bottom one too): most Reserves
	// look up a key that is stored nowhere, which a filter answers without reading its data
	// blocks (BenchmarkKeyedRequest; docs/benchmarks.md).
	opts := &pebble.Options{Logger: pebbleLogger{log: log}, CacheSize: blockCacheSize, FS: deps.FS}
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(cfg.Dir, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: open pebble in %s: %w", dedupe.ErrUnavailable, cfg.Dir, err)
	}
	s := &Store{clock: clock, seed: maphash.MakeSeed(), db: db, log: log, resolving: cfg.ResolveFromQueue, margin: cfg.resolveMargin()}
	// Read even when commits are fsynced now: an earlier run may have resolved them from the
	// queue and left marks to resolve (ResolveMarks).
	if s.synced, err = readSynced(db); err != nil {
		_ = db.Close()
		return nil, err
	}
	if s.resolving {
		s.stopSync, s.syncDone = make(chan struct{}), make(chan struct{})
		interval := cfg.SyncInterval
		if interval <= 0 {
			interval = DefaultSyncInterval
		}
		go s.syncLoop(interval, s.stopSync, s.syncDone)
	}
	return s, nil
}

// Reserve implements dedupe.Store. A new claim is kept in memory only (shard).
func (s *Store) Reserve(ctx context.Context, key dedupe.Key, fingerprint string, lease time.Duration) (dedupe.Reservation, error) {
	if err := dedupe.CheckReserve(key, lease); err != nil {
		return dedupe.Reservation{}, err
	}
	var res dedupe.Reservation
	err := s.withKey(ctx, key, func(db *pebble.DB, sh *shard, k []byte) error {
		cur, found, _, err := sh.current(db, k)
		if err != nil {
			return err
		}
		now := s.clock.Now()
		claim := dedupe.Claim{Token: dedupe.NewToken(), LeaseUntil: now.Add(lease)}
		lapsed, resolved := false, false
		if found {
			rec := cur.record()
			if rec.Live(now) {
				res = dedupe.Classify(rec, fingerprint, now)
				return nil
			}
			claim.Frame, claim.FrameUntil = dedupe.Inherited(rec, now)
			if cur.Resolved && claim.Frame != "" {
				if cur.Fingerprint != fingerprint {
					// The request a resolved claim names was answered 2xx; as its commit would.
					res = dedupe.Reservation{Outcome: dedupe.OutcomeMismatch, Record: rec}
					return nil
				}
				resolved = true
			}
			lapsed = dedupe.MarkLapsed(rec, now)
		}
		next := stored{
			State:       int(dedupe.StatePending),
			Token:       claim.Token,
			Fingerprint: fingerprint,
			LeaseUntil:  claim.LeaseUntil.UnixNano(),
		}
		if claim.Frame != "" {
			// Pebble keeps the record that holds the inherited mark until this claim is marked
			// or committed, so a crash leaves the mark for the next owner.
			next.Frame, next.FrameUntil, next.Resolved = claim.Frame, claim.FrameUntil.UnixNano(), resolved
		}
		sh.hold(k, next)
		res = dedupe.Reservation{Outcome: dedupe.OutcomeClaimed, Claim: claim, Reclaimed: found, MarkLapsed: lapsed}
		return nil
	})
	return res, err
}

// Commit implements dedupe.Store. The record is fsynced before Commit returns, or within
// Config.SyncInterval with Config.ResolveFromQueue.
func (s *Store) Commit(ctx context.Context, key dedupe.Key, token string, resp dedupe.Response, retention time.Duration) error {
	if err := dedupe.CheckCommit(key, token, resp, retention); err != nil {
		return err
	}
	return s.withKey(ctx, key, func(db *pebble.DB, sh *shard, k []byte) error {
		cur, _, err := sh.owned(db, k, token)
		if err != nil {
			return err
		}
		cur.State = int(dedupe.StateCommitted)
		cur.ExpiresAt = s.clock.Now().Add(retention).UnixNano()
		cur.Status = resp.Status
		cur.Body = resp.Body
		b := db.NewBatch()
		defer b.Close()
		if s.resolving && cur.Frame != "" {
			if err := deleteIndexEntry(b, cur.FrameUntil, k); err != nil {
				return unavailable("write commit", err)
			}
		}
		// A committed record needs no claim: the token and lease are not kept.
		cur.Frame, cur.FrameUntil, cur.Resolved, cur.Token, cur.LeaseUntil = "", 0, false, "", 0
		if err := b.Set(k, encode(cur), nil); err != nil {
			return unavailable("write commit", err)
		}
		if err := b.Commit(s.commitOptions()); err != nil {
			return unavailable("write commit", err)
		}
		if s.resolving {
			s.unsynced.Store(true)
		}
		sh.drop(k)
		return nil
	})
}

// Release implements dedupe.Store.
func (s *Store) Release(ctx context.Context, key dedupe.Key, token string) error {
	if err := dedupe.CheckRelease(key, token); err != nil {
		return err
	}
	return s.withKey(ctx, key, func(db *pebble.DB, sh *shard, k []byte) error {
		cur, mine, err := sh.owned(db, k, token)
		if err != nil {
			return err
		}
		switch {
		case cur.Frame != "":
			// The request may be in the queue: keep the mark for the next owner to resolve.
			// A token nobody holds: the caller no longer owns it.
			cur.LeaseUntil, cur.Token = s.clock.Now().UnixNano(), dedupe.NewToken()
			if err := db.Set(k, encode(cur), pebble.NoSync); err != nil {
				return unavailable("expire claim", err)
			}
		case !mine:
			if err := db.Delete(k, pebble.NoSync); err != nil {
				return unavailable("delete claim", err)
			}
		}
		sh.drop(k)
		return nil
	})
}

// Get implements dedupe.Store.
func (s *Store) Get(ctx context.Context, key dedupe.Key) (dedupe.Record, error) {
	if err := key.Validate(); err != nil {
		return dedupe.Record{}, err
	}
	var rec dedupe.Record
	err := s.withKey(ctx, key, func(db *pebble.DB, sh *shard, k []byte) error {
		cur, found, _, err := sh.current(db, k)
		if err != nil {
			return err
		}
		if !found || !cur.record().Live(s.clock.Now()) {
			return dedupe.ErrNotFound
		}
		rec = cur.record()
		return nil
	})
	return rec, err
}

// Close closes the database. It waits for calls in progress and is idempotent.
func (s *Store) Close(context.Context) error {
	s.stopOnce.Do(func() {
		if s.resolving {
			// Before taking mu: a sync in progress holds it shared.
			close(s.stopSync)
			<-s.syncDone
		}
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.closeErr
	}
	s.closed = true
	if s.resolving {
		// The last commits, durable before the database closes.
		if err := s.db.LogData(nil, pebble.Sync); err != nil {
			s.closeErr = fmt.Errorf("sync pebble: %w", err)
		}
	}
	if err := s.db.Close(); err != nil && s.closeErr == nil {
		s.closeErr = fmt.Errorf("close pebble: %w", err)
	}
	s.db = nil
	return s.closeErr
}

// withDB runs fn with the open database, or returns ErrClosed.
func (s *Store) withDB(ctx context.Context, fn func(db *pebble.DB) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return dedupe.ErrClosed
	}
	return fn(s.db)
}

// withKey runs fn holding the mutex of key's shard, so read-modify-write cycles on one key
// never interleave.
func (s *Store) withKey(ctx context.Context, key dedupe.Key, fn func(db *pebble.DB, sh *shard, k []byte) error) error {
	k := key.Encode()
	return s.withDB(ctx, func(db *pebble.DB) error {
		sh := &s.shards[shardOf(s, k)]
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return fn(db, sh, []byte(k))
	})
}

func shardOf(s *Store, k string) uint64 {
	return maphash.String(s.seed, k) % shardCount
}

// getOptions makes a point read consult the Bloom filters of every level, the bottom one
// included, which Pebble's DB.Get skips (it expects most lookups to find their key; ours mostly
// do not).
var getOptions = pebble.IterOptions{UseL6Filters: true}

// get reads the record stored under k.
func get(db *pebble.DB, k []byte) (stored, bool, error) {
	it, err := db.NewIter(&getOptions)
	if err != nil {
		return stored{}, false, unavailable("read", err)
	}
	found := it.SeekPrefixGE(k) && bytes.Equal(it.Key(), k)
	var cur stored
	if found {
		cur, err = decode(it.Value())
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return stored{}, false, unavailable("read", err)
	}
	return cur, found, nil
}

func unavailable(op string, err error) error {
	return fmt.Errorf("%w: pebble %s: %w", dedupe.ErrUnavailable, op, err)
}
