package dedupe

import "errors"

// Sentinel errors returned by every Store. Backends wrap them with %w and keep the cause, so
// callers branch with errors.Is and never inspect a backend SDK's error types.
var (
	// ErrUnavailable means the backend could not be reached or did not answer in time (after the
	// backend's own bounded retries, or because its breaker is open). The outcome of a write that
	// fails with it is unknown. The HTTP layer answers 503 dedupe.unavailable with Retry-After.
	ErrUnavailable = errors.New("dedupe: unavailable")

	// ErrClosed is returned by every call made after Close.
	ErrClosed = errors.New("dedupe: closed")

	// ErrNotOwner is returned by Commit and Release when the claim token no longer owns the
	// record: another client reclaimed the key after the lease ended, the claim was already
	// committed or released, or the record is gone.
	ErrNotOwner = errors.New("dedupe: not owner")

	// ErrNotFound is returned by Get when no live record exists for the key (never written,
	// released, or past its lease or retention).
	ErrNotFound = errors.New("dedupe: not found")

	// ErrInvalid is returned for arguments the store cannot accept: an empty key part, a
	// non-positive lease or retention, an empty claim token, or a response the backend
	// cannot store.
	ErrInvalid = errors.New("dedupe: invalid argument")
)

// IsUnavailable reports whether err means the dedupe store cannot answer right now, which
// includes a closed store. Callers use it to answer 503 dedupe.unavailable.
func IsUnavailable(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrClosed)
}
