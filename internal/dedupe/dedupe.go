package dedupe

import (
	"context"
	"time"
)

// Store records idempotency keys and the responses of the requests that carried them.
//
// A request with a key first calls Reserve. If it wins the claim it does its work and then
// either Commits the response (later requests with the same key get it back) or Releases the
// claim (the work definitely did not happen, so a retry may do it). A claim that is neither
// committed nor released lapses when its lease ends and the key becomes claimable again.
//
// Expiry is decided from the Clock given to the backend and the times stored in the record, at
// the moment of each read or conditional write: a lease past its end is claimable, a committed
// record past its retention is treated as absent. No background deletion is needed for
// correctness; Sweeper only reclaims space.
//
// All methods are safe for concurrent use, including from several processes sharing one
// backend (where the backend supports it). ctx bounds the call, including the backend's own
// bounded retries. Slices passed in are not retained after the call returns; slices returned
// belong to the caller. After Close every method returns ErrClosed.
type Store interface {
	// Reserve tries to claim key for a request whose body has the given fingerprint, for lease.
	// Exactly one of any number of concurrent callers that find the key claimable wins.
	Reserve(ctx context.Context, key Key, fingerprint string, lease time.Duration) (Reservation, error)

	// Commit records resp for key and keeps it for retention, provided token still owns the
	// claim (the claim is pending and nobody has reclaimed the key since). A claim whose lease
	// ended can still be committed as long as nobody reclaimed the key. Otherwise it returns
	// ErrNotOwner and changes nothing.
	Commit(ctx context.Context, key Key, token string, resp Response, retention time.Duration) error

	// Release frees key so the next Reserve claims it, provided token still owns a pending
	// claim; otherwise it returns ErrNotOwner and changes nothing, so a stale release never
	// frees a newer claim or deletes a committed response. A marked claim (Mark) is not
	// deleted: its lease is ended and its token replaced instead, so the next Reserve claims it at once and learns
	// the frame (Claim.Frame) it must resolve before publishing again.
	Release(ctx context.Context, key Key, token string) error

	// Mark records, durably before it returns, that the requests of claims are about to be
	// published in the queue frame frame, which the queue can look up until until. It returns
	// one error per claim, in order: nil, ErrNotOwner (the claim is no longer pending with that
	// token; nothing changed), or another error (the outcome is unknown). A claim taken over
	// a marked one (Reserve after the lease ended or after Release) carries the mark
	// (Claim.Frame) until the next Mark replaces it or until passes; a Commit ends it.
	Mark(ctx context.Context, frame string, until time.Time, claims []Owned) []error

	// Get returns the live record for key: a pending claim whose lease has not ended or a
	// committed record within its retention. Otherwise it returns ErrNotFound.
	Get(ctx context.Context, key Key) (Record, error)

	// Close releases the store's resources. It is idempotent; the first call's error is
	// returned again by later calls.
	Close(ctx context.Context) error
}

// Sweeper is implemented by stores that can delete expired records to reclaim space. The
// sweeper role calls it under its lease; correctness never depends on it.
type Sweeper interface {
	// Sweep deletes records that are expired at now (pending claims whose lease ended and
	// whose mark, if any, passed its FrameUntil; committed records past their retention) and returns how many it deleted. A record that
	// is claimed or committed again while the sweep runs is kept. ctx bounds the whole sweep;
	// records deleted before ctx ends stay deleted and are counted.
	Sweep(ctx context.Context, now time.Time) (removed int, err error)
}

// Clock is the source of the current time for expiry decisions. Backends take it in their
// Deps; tests inject a fake one.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
}

// SystemClock is the Clock backed by time.Now.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }
