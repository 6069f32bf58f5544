// Package dedupe is the contract of the idempotency-key store: the layer that lets a retried
// ingest request be answered with the response of the first attempt instead of being enqueued
// twice.
//
// It holds only the interfaces, value types, sentinel errors and the small helpers every
// backend shares; it imports no backend SDK. Backends live in dedupe/localdedupe (Pebble on
// local disk, one process) and dedupe/dynamodedupe (one DynamoDB table, shared by processes);
// dedupe/dedupetest is the conformance suite both run.
//
// # Semantics
//
// A record is addressed by a Key (tenant, table, idempotency key). Key.Encode turns it into the
// backend key: it starts with the escaped tenant, and escaping makes distinct keys encode
// distinctly whatever bytes they contain ('/', '#', ':', '%', unicode, invalid UTF-8, 1 KiB and
// longer IDs, which are hashed with SHA-256 past MaxEncodedIDLen).
//
// A record is either a pending claim (a token, the request's fingerprint and a lease end) or a
// committed response (status, body, fingerprint and a retention end). The flow is:
//
//   - Reserve(key, fingerprint, lease): if the key has no live record, a new pending claim is
//     written and returned with a fresh token (OutcomeClaimed; Reclaimed tells whether it
//     replaced an expired record). Otherwise nothing is written and the live record decides:
//     a different fingerprint is OutcomeMismatch (pending or committed), a committed record is
//     OutcomeDuplicate with its response, a pending one is OutcomeInFlight with RetryAfter set
//     to the rest of its lease. Concurrent Reserves of one key, from any number of clients
//     sharing the backend, produce exactly one OutcomeClaimed.
//   - Commit(key, token, response, retention): turns the caller's pending claim into a
//     committed record that expires retention after the commit. It succeeds as long as the
//     record is still the pending claim with that token, even after the lease ended, since
//     nobody else has taken the key; otherwise ErrNotOwner and nothing changes.
//   - Release(key, token): deletes the caller's pending claim, so the next Reserve claims the
//     key at once. Only the owning token of a pending claim can release; a stale token (the
//     key was reclaimed after its lease, or already committed or released) gets ErrNotOwner
//     and never frees a newer claim or deletes a committed response.
//   - Get(key): the live record, or ErrNotFound.
//
// Expiry is exact and needs no background job. Each backend compares the times stored in the
// record with the Clock it was given (Deps.Clock) at the moment of every read and inside every
// conditional write: a claim is live while now < LeaseUntil and a committed record while now <
// ExpiresAt; at those instants they are expired. An expired record behaves exactly like an
// absent one (Get returns ErrNotFound, Reserve claims over it). The optional Sweeper interface
// deletes expired records to reclaim space; DynamoDB's own TTL attribute is set for the same
// purpose only.
//
// # Errors
//
//   - ErrUnavailable: the backend did not answer (down, timed out after its bounded retries,
//     breaker open, disk error). The outcome of a write is unknown. Callers answer 503
//     dedupe.unavailable with Retry-After; requests without a key are unaffected.
//   - ErrClosed: the Store was closed. IsUnavailable is true for both.
//   - ErrNotOwner: Commit or Release by a token that no longer owns a pending claim.
//   - ErrNotFound: Get found no live record.
//   - ErrInvalid: an empty key part, an encoded key over MaxEncodedKeyLen, a non-positive lease
//     or retention, an empty token, a status outside 100..999, or a record the backend cannot
//     store (DynamoDB items are limited to 400 KB).
//   - Context errors from the caller's ctx are returned wrapped and stay recognisable with
//     errors.Is(err, context.Canceled) and context.DeadlineExceeded.
//
// Backends translate their SDK errors at the boundary with %w; callers never inspect SDK
// types.
//
// # Capabilities
//
// The conformance suite's Caps name where backends differ:
//
//   - IndependentClients: dynamodedupe clients in any number of processes share one table;
//     localdedupe is one handle per directory (Pebble locks it) and serves one process.
//   - Outage: dynamodedupe can lose its server (ErrUnavailable, breaker); localdedupe fails
//     only with its disk.
//   - Sweeper: both implement Sweeper.
//
// Durability: localdedupe fsyncs Commit and Mark; it keeps a claim in memory until Mark writes
// it, and does not fsync Release (a claim lost in a crash died with its request, which was never
// published unless it was marked); dynamodedupe writes are durable when DynamoDB acknowledges
// them.
package dedupe
