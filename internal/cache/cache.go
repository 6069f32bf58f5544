package cache

import (
	"context"
	"time"
)

// Results stores query results as opaque bytes under a [Key].
type Results interface {
	// Get returns the value stored under key, or an error wrapping ErrMiss when there is
	// none. The returned slice belongs to the caller.
	Get(ctx context.Context, key Key) ([]byte, error)
	// Set stores value under key for ttl (ttl <= 0 means the backend's default). A value
	// above the backend's cap is not stored and ErrTooLarge is returned. value is not
	// retained after Set returns.
	Set(ctx context.Context, key Key, value []byte, ttl time.Duration) error
}

// Viewer is implemented by backends that can lend a stored value without copying it, so a
// cache hit costs no copy of the result. Callers find it by type assertion and fall back to
// [Results.Get].
type Viewer interface {
	// View returns the value stored under key like Get, but the slice is shared with the
	// cache and every other caller: it must not be modified. It stays valid after the entry
	// is replaced, expires or is evicted (stored values are never written in place).
	View(ctx context.Context, key Key) ([]byte, error)
}

// Versioner holds the random version tokens that invalidate results.
type Versioner interface {
	// Versions reads, usually in one round trip, the tenant's versions and the version of
	// each table in deps. A version the backend does not hold is created with a fresh
	// random token, never read as 0 (see the package doc). It returns ErrUnavailable while
	// a bump that would change the answer has not reached the backend yet. deps is only
	// read: callers may share its slice between concurrent calls.
	Versions(ctx context.Context, tenant string, deps Deps) (Versions, error)
	// BumpTable writes fresh tokens to the version of (tenant, table) and the tenant's write
	// version (which queries over unknown tables depend on). If the backend cannot be reached,
	// the bump is remembered and retried by Run until it lands, and nil is returned,
	// because the bump is no longer the caller's to retry.
	BumpTable(ctx context.Context, tenant, table string) error
	// BumpTenant writes a fresh epoch token, orphaning every result of the tenant (for
	// schema changes and purges), with the same delivery guarantee as BumpTable.
	BumpTenant(ctx context.Context, tenant string) error
}

// Cache is a complete cache backend with its lifecycle.
type Cache interface {
	Results
	Versioner
	// Run does the backend's background work (retrying undelivered bumps) until ctx is
	// done or the cache is closed. It returns nil on either.
	Run(ctx context.Context) error
	// Close releases the backend. It is idempotent; later calls of other methods return
	// ErrClosed.
	Close(ctx context.Context) error
}

// BreakerState is the state of a backend's circuit breaker.
type BreakerState string

// Circuit breaker states.
const (
	// BreakerClosed lets every operation through.
	BreakerClosed BreakerState = "closed"
	// BreakerOpen fails operations fast with ErrUnavailable until the cool-down ends.
	BreakerOpen BreakerState = "open"
	// BreakerHalfOpen lets one probe through; its success closes the breaker.
	BreakerHalfOpen BreakerState = "half_open"
)

// Health is a snapshot of a backend's state for metrics and readiness.
type Health struct {
	// Breaker is the circuit breaker state (always closed for in-process backends).
	Breaker BreakerState
	// BreakerOpens counts the transitions to open since the cache was built.
	BreakerOpens uint64
	// PendingInvalidations counts bumps not yet delivered to the backend.
	PendingInvalidations int
}

// HealthReporter is implemented by backends that can report [Health].
type HealthReporter interface {
	Health() Health
}
