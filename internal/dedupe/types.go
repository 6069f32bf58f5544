package dedupe

import (
	"bytes"
	"time"
)

// Outcome is the result of a Reserve.
type Outcome int

const (
	// OutcomeClaimed means the caller owns the key until Reservation.Claim.LeaseUntil and must
	// Commit or Release it.
	OutcomeClaimed Outcome = iota + 1
	// OutcomeDuplicate means the key was committed by an earlier request with the same
	// fingerprint; Reservation.Record holds its response.
	OutcomeDuplicate
	// OutcomeInFlight means another request with the same fingerprint holds a live claim;
	// Reservation.RetryAfter is the rest of its lease.
	OutcomeInFlight
	// OutcomeMismatch means the key is committed or claimed by a request with a different
	// fingerprint; Reservation.Record holds that record.
	OutcomeMismatch
)

// String returns the outcome's name as used in metrics labels.
func (o Outcome) String() string {
	switch o {
	case OutcomeClaimed:
		return "claimed"
	case OutcomeDuplicate:
		return "duplicate"
	case OutcomeInFlight:
		return "in_flight"
	case OutcomeMismatch:
		return "mismatch"
	default:
		return "unknown"
	}
}

// State is the state of a stored record.
type State int

const (
	// StatePending is a claim whose request has not finished.
	StatePending State = iota + 1
	// StateCommitted is a finished request with its recorded response.
	StateCommitted
)

// String returns the state's name.
func (s State) String() string {
	switch s {
	case StatePending:
		return "pending"
	case StateCommitted:
		return "committed"
	default:
		return "unknown"
	}
}

// Response is the recorded answer to a request, replayed to its duplicates.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Body is the response body. The store copies it; the caller keeps ownership.
	Body []byte
}

// Equal reports whether r and o have the same status and body.
func (r Response) Equal(o Response) bool {
	return r.Status == o.Status && bytes.Equal(r.Body, o.Body)
}

// Claim is a won reservation. Token proves ownership to Commit and Release.
type Claim struct {
	// Token is an opaque random string unique to this claim.
	Token string
	// LeaseUntil is when the claim lapses if not committed or released.
	LeaseUntil time.Time
	// Frame is the queue frame an earlier claim of the key (same fingerprint) was marked with
	// and that nobody resolved yet: that request may or may not be in the queue. The new owner
	// must find out (the queue can tell until FrameUntil) before publishing the request again.
	// Empty when the key held no such mark.
	Frame string
	// FrameUntil is how long Frame can still be resolved by the queue.
	FrameUntil time.Time
}

// Owned names a claim by its key and token, for calls that act on several claims at once.
type Owned struct {
	Key   Key
	Token string
}

// Record is a stored idempotency record.
type Record struct {
	// State is pending or committed.
	State State
	// Fingerprint identifies the request that made the record (for example a hash of tenant,
	// table and body).
	Fingerprint string
	// LeaseUntil is the end of a pending claim's lease.
	LeaseUntil time.Time
	// ExpiresAt is the end of a committed record's retention.
	ExpiresAt time.Time
	// Response is the recorded response; zero for a pending claim.
	Response Response
	// Frame and FrameUntil are a pending claim's mark (Store.Mark): the queue frame its request
	// was, or is about to be, published in, and until when the queue can tell whether it was.
	Frame      string
	FrameUntil time.Time
}

// Reservation is the result of Store.Reserve.
type Reservation struct {
	// Outcome says which of the fields below are set.
	Outcome Outcome
	// Claim is set for OutcomeClaimed.
	Claim Claim
	// Reclaimed is true for OutcomeClaimed when the key held a record that had expired (a
	// lapsed lease or a committed record past its retention) and the claim replaced it. Metrics
	// count it as the "expired" outcome.
	Reclaimed bool
	// MarkLapsed is true for OutcomeClaimed when the replaced record was a pending claim marked
	// with a queue frame that can no longer be resolved (past its FrameUntil): the earlier
	// attempt's request may be enqueued, and this claim cannot find out, so publishing it again
	// may enqueue it twice (docs/idempotency.md#limits). Metrics count it as "mark_lapsed".
	MarkLapsed bool
	// Record is the existing record for OutcomeDuplicate, OutcomeInFlight and
	// OutcomeMismatch.
	Record Record
	// RetryAfter is the rest of the other claim's lease for OutcomeInFlight, and for
	// OutcomeMismatch when the other record is pending; it is at least one millisecond.
	RetryAfter time.Duration
}
