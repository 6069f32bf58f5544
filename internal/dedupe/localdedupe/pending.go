package localdedupe

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// shard is one of the Store's key shards. Its mutex serialises the read-modify-write cycles on
// its keys; pending holds the pending claims this Store made under them.
//
// The Store is the only writer of its directory (Pebble locks it), so its own claims need not
// be in Pebble at all: a claim lives in pending until it is committed, released or swept, and is
// written to Pebble only when it is marked with a queue frame (Mark, fsynced). An unmarked claim
// lost in a crash was never published, so nothing needs it after a restart, and the retry claims
// the key at once instead of waiting out the lease. Each keyed request thus writes Pebble twice
// (its frame's mark, its commit) and reads it once (the Reserve of a key not in pending).
type shard struct {
	mu sync.Mutex
	// pending maps an encoded key to the claim this Store holds on it. An entry is the key's
	// current record: a marked one is also what Pebble holds, an unmarked one replaces whatever
	// Pebble holds (nothing live: a Reserve claims only a key without a live record). Guarded
	// by mu.
	pending map[string]stored
}

// current returns the record under k and whether it is one of this Store's claims (in pending)
// rather than read from Pebble.
func (sh *shard) current(db *pebble.DB, k []byte) (cur stored, found, mine bool, err error) {
	if cur, ok := sh.pending[string(k)]; ok {
		return cur, true, true, nil
	}
	cur, found, err = get(db, k)
	return cur, found, false, err
}

// owned returns the record under k if it is a pending claim held by token, else ErrNotOwner,
// and whether it is one of this Store's claims. A pending record read from Pebble can be owned
// too: the claim of an earlier Store on the same directory, marked, or written before claims
// were kept in memory.
func (sh *shard) owned(db *pebble.DB, k []byte, token string) (stored, bool, error) {
	cur, found, mine, err := sh.current(db, k)
	if err != nil {
		return stored{}, false, err
	}
	if !found || cur.State != int(dedupe.StatePending) || cur.Token != token {
		return stored{}, false, dedupe.ErrNotOwner
	}
	return cur, mine, nil
}

// hold makes v, a pending claim, the current record under k.
func (sh *shard) hold(k []byte, v stored) {
	if sh.pending == nil {
		sh.pending = make(map[string]stored)
	}
	sh.pending[string(k)] = v
}

// drop ends this Store's claim on k, if it has one: the key's record is Pebble's again.
func (sh *shard) drop(k []byte) {
	delete(sh.pending, string(k))
}

// prune ends the claims whose lease lapsed before now, requests that never settled them: the
// counterpart of the sweep deleting a lapsed claim. A claim with a frame (its own mark or one it
// inherited) has a record in Pebble, which the sweep keeps while the frame can be resolved. It
// returns how many claims without one it ended: those records are gone.
func (s *Store) prune(now time.Time) int {
	ended := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, v := range sh.pending {
			if !time.Unix(0, v.LeaseUntil).After(now) {
				delete(sh.pending, k)
				if v.Frame == "" {
					ended++
				}
			}
		}
		sh.mu.Unlock()
	}
	return ended
}
