// Package limits enforces per-tenant (and optional per-key) rate and concurrency limits from the
// settings in force: requests per second and rows per second as token buckets with bursts
// (golang.org/x/time/rate), and a semaphore bounding a tenant's concurrent queries.
//
// # Semantics
//
// Every tenant (and every key with its own limits) has its own buckets, so a tenant over its rate
// never drains another's. A request must pass both its tenant's and its key's bucket; when the
// key's refuses, the tenant's token is given back. A limit of zero means unlimited.
//
// A limiter never blocks longer than Config.MaxWait (rate tokens) or Config.QueryWait (query
// slots), and never past the request's own context deadline: if the wait needed is longer, the
// request is refused at once with the time after which it would pass (Retry-After).
//
// Limits follow the settings: a changed limit applies to the next request (keeping the tokens
// already earned, up to the new burst); a removed tenant or key loses its state.
//
// # Errors
//
// Refusals are Decisions, not errors; Reject answers them with 429, code "limits.<kind>",
// Retry-After and RateLimit-Limit / RateLimit-Remaining / RateLimit-Reset headers. A request with
// more rows than the rows burst can never pass and is refused as not retryable.
//
// # Capabilities
//
// Limits are per process: with N api processes a tenant gets up to N times its rate. The queue
// byte budget (queue_max_bytes in a tenant's settings file) is enforced by the queue, not here.
package limits
