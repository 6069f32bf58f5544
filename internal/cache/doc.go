// Package cache is the contract of WaveHouse's query-result cache layer: result bytes stored
// under a key with a time to live, and the table and tenant versions that make an insert
// invalidate every result that read the table.
//
// The package imports no backend SDK. Backends live in cache/localcache (in-process,
// byte-bounded) and cache/rediscache (Redis or Valkey, standalone or cluster); the
// conformance suite every backend runs is cache/cachetest.
//
// # Semantics
//
// A cached result is filed under a [Key] built by [NewKey] from the tenant, the normalised
// SQL, the bound parameters and the [Versions] the query depends on. Versions are opaque
// random tokens ([NewToken]), not counters: one per (tenant, table), and per tenant an
// epoch and a write version. [Versioner.BumpTable] writes fresh tokens to the table's
// version and the tenant's write version; [Versioner.BumpTenant] writes a fresh epoch.
// Every key folds the epoch; a key for a query whose tables are known ([Deps].Tables)
// folds those tables' versions; a key for a query whose tables are not known
// ([Deps].AllTables) folds the write version, so any insert of the tenant orphans it. A
// key built from new tokens differs from every key built before the bump, so older
// entries are orphaned and age out through their TTL or the backend's eviction. Nothing
// is ever deleted to invalidate.
//
// A missing version is a miss. Two reads return the same token only if no bump and no loss
// of the version happened in between. A version the backend does not hold (never bumped,
// deleted, evicted, emptied by a restart) is never read as 0 or as any fixed value: the
// backend creates it with a fresh random token (rediscache: SET NX, so concurrent readers
// agree), or, in-process, starts every version from a random token per instance. So a lost
// version can never match a fill filed before the loss, and a bump after a loss never
// returns to an older token (as an INCR from nothing would).
//
// The caller must read versions BEFORE running the query and file the result under the key
// built from those versions. An insert that lands while the query runs bumps the counters,
// so the fill is stored under the superseded key that no later lookup builds: a stale fill
// is unreachable rather than served.
//
// Every physical key of every backend starts with the escaped tenant ([EscapeTenant]), so
// two tenants never share an entry or a counter even with identical table names and SQL.
//
// All methods are safe for concurrent use. Values passed to [Results.Set] are not retained
// after it returns; slices returned by [Results.Get] belong to the caller. A backend that
// implements [Viewer] also lends stored values without a copy, for the hot path of a hit. ctx bounds the
// call; backends add their own per-operation timeout. No method retries: a backend
// classifies a failure and returns it.
//
// Long-lived backends expose Run(ctx) for background work (retrying invalidations) and an
// idempotent Close(ctx); every call after Close returns [ErrClosed].
//
// # Errors
//
//   - [ErrMiss]: no entry under the key (never stored, expired, evicted or orphaned).
//   - [ErrUnavailable]: the backend cannot answer now (down, timed out, circuit breaker
//     open, or an invalidation it depends on has not reached the backend yet). The caller
//     bypasses the cache and runs the query; it never fails the query for this.
//   - [ErrTooLarge]: [Results.Set] refused a value above the backend's size cap; nothing
//     was stored.
//   - [ErrClosed]: the cache was closed.
//
// [Bypass] reports whether an error means "run the query without the cache". Context
// errors are returned wrapped so errors.Is(err, context.DeadlineExceeded) still works.
//
// # Capabilities
//
//   - Shared: instances built over the same backend see each other's entries and bumps
//     (rediscache). localcache is per process: two instances are independent, which is why
//     boot refuses api and ingest in different processes over the local cache.
//   - Outage: the backend can be unreachable; the backend then reports [ErrUnavailable]
//     quickly, remembers bumps it could not deliver, and reports [Health]. Until a
//     remembered bump lands, only the process that remembers it bypasses; other
//     processes may serve the entries it would orphan until their TTL ends.
package cache
