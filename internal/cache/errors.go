package cache

import "errors"

// Sentinel errors of the cache layer. Backends wrap them with %w, keeping the cause.
var (
	// ErrMiss reports that no entry is stored under the key.
	ErrMiss = errors.New("cache: miss")
	// ErrUnavailable reports that the backend cannot answer now; the caller bypasses the cache.
	ErrUnavailable = errors.New("cache: unavailable")
	// ErrTooLarge reports that a value exceeds the backend's size cap and was not stored.
	ErrTooLarge = errors.New("cache: too large")
	// ErrClosed reports a call made after Close.
	ErrClosed = errors.New("cache: closed")
)

// Bypass reports whether err means the caller should answer without the cache: a miss
// does not (the caller runs the query and fills), while unavailable, closed and context
// errors do. Bypass(nil) is false.
func Bypass(err error) bool {
	if err == nil || errors.Is(err, ErrMiss) || errors.Is(err, ErrTooLarge) {
		return false
	}
	return true
}
