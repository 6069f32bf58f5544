package coord

import (
	"context"
	"errors"
	"time"
)

// DefaultLease is the lease duration of every backend given none; the boot config's default for
// coord.lease is this constant.
const DefaultLease = 15 * time.Second

// Sentinel errors of the coordination layer. Backends wrap their causes with
// %w so that callers can branch with errors.Is.
var (
	// ErrHeld reports that the lease is held by another live term.
	ErrHeld = errors.New("coord: held")
	// ErrLeaseLost is a term's Err after the lease could not be renewed in
	// time or was taken over by another holder.
	ErrLeaseLost = errors.New("coord: lease lost")
	// ErrResigned is a term's Err after Resign or after its coordinator was
	// closed.
	ErrResigned = errors.New("coord: resigned")
	// ErrUnavailable reports that the backend could not be reached.
	ErrUnavailable = errors.New("coord: unavailable")
	// ErrClosed reports a call on a closed coordinator.
	ErrClosed = errors.New("coord: closed")
	// ErrInvalidName reports a lease name outside the allowed alphabet.
	ErrInvalidName = errors.New("coord: invalid name")
)

// Coordinator grants named leases.
type Coordinator interface {
	// TryAcquire tries once to take the lease called name. It returns a live
	// term on success, and ErrHeld when another live term holds the lease
	// (including one held by this coordinator). It never waits for the lease
	// to become free; campaign with RunElected or by calling it again.
	//
	// ctx bounds this call only: cancelling it later does not end the term.
	// A ctx that is already done makes the call fail with ctx's error.
	TryAcquire(ctx context.Context, name string) (Term, error)

	// Close resigns every term this coordinator holds (their Err becomes
	// ErrResigned) and releases its resources. ctx bounds the resignation
	// round trips; a lease whose resignation could not be delivered expires
	// after the lease duration. Close is idempotent; TryAcquire after Close
	// returns ErrClosed.
	Close(ctx context.Context) error
}

// Term is one holder's tenure of a lease.
type Term interface {
	// Name returns the lease name.
	Name() string
	// Token returns the fencing token of this term: strictly greater than the
	// token of every earlier term of the same lease name.
	Token() uint64
	// Holder returns the identity of the holding coordinator (its instance id).
	Holder() string
	// Done is closed when the term ends, for whatever reason.
	Done() <-chan struct{}
	// Err returns nil while the term is live, then ErrLeaseLost or
	// ErrResigned (possibly wrapping a cause) once Done is closed.
	Err() error
	// Resign ends the term and releases the lease so that another holder can
	// take it without waiting for the lease to expire. The term is ended
	// (Done closed) before the release is sent, so no two terms overlap. ctx
	// bounds the release round trip; if the release fails the lease expires
	// after the lease duration and Resign returns the error. Resigning an
	// ended term is a no-op that returns nil.
	Resign(ctx context.Context) error
}

// Lease describes the current holder of a lease, as seen by a HolderReader.
type Lease struct {
	// Name is the lease name.
	Name string
	// Holder is the instance id of the holder.
	Holder string
	// Token is the fencing token of the holder's term.
	Token uint64
}

// HolderReader is implemented by coordinators that can report the current
// holder of a lease without campaigning for it.
type HolderReader interface {
	// Holder returns the lease's current holder and true, or a zero Lease and
	// false when nobody holds it. A remote backend reports the last holder
	// recorded in the backend, which may have stopped renewing but whose lease
	// has not been taken over yet.
	Holder(ctx context.Context, name string) (Lease, bool, error)
}

// ValidateName reports whether name is a valid lease name: 1 to 128
// characters from [A-Za-z0-9_-].
func ValidateName(name string) error {
	if name == "" || len(name) > 128 {
		return ErrInvalidName
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return ErrInvalidName
		}
	}
	return nil
}
