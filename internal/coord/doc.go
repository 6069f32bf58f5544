// Package coord is the contract of the coordination layer: named leases that
// decide which process runs a singleton job (the sweeper), each term carrying a
// fencing token.
//
// A [Coordinator] grants a lease through [Coordinator.TryAcquire]; the caller
// then holds a [Term] until it resigns, the coordinator is closed, or the lease
// is lost. [RunElected] wraps that in the usual loop: campaign, run the job
// while holding, campaign again.
//
// This package imports no backend SDK. Backends live in coord/localcoord
// (in-process) and coord/natscoord (a NATS JetStream KV bucket).
//
// # Semantics
//
// At most one term per lease name is live at any moment, across every
// coordinator sharing the backend. "Live" is judged by each holder on its own
// clock: a holder ends its term (closes [Term.Done]) as soon as it can no
// longer prove it still holds the lease, which for a distributed backend is
// strictly before any other coordinator may take the lease over. Takeover of a
// lease whose holder stopped renewing happens only after the lease duration has
// elapsed on the candidate's own monotonic clock; clocks are never compared
// across hosts. The argument assumes bounded clock-rate drift between hosts,
// not synchronised clocks; the backends' safety margin absorbs the drift and
// scheduling delays (see docs/coord.md).
//
// Every term carries a fencing token ([Term.Token]) that is strictly greater
// than the token of every earlier term of the same name. A job that writes to
// a shared system should carry the token along so that the system can reject
// writes from a holder whose term ended while a write was in flight: the end
// of a term is observed asynchronously by the job (its context is cancelled),
// so the token, not the context, is what makes a late write harmless.
//
// The ctx given to TryAcquire bounds only that call. The term outlives it and
// is renewed in the background until Resign, Close, or loss.
//
// Coordinators and terms are safe for concurrent use.
//
// # Errors
//
//   - [ErrHeld]: TryAcquire found the lease held by a live holder (including
//     this coordinator). It is an expected outcome, not a failure.
//   - [ErrLeaseLost]: [Term.Err] after the term ended because the lease could
//     not be renewed in time or was taken over.
//   - [ErrResigned]: [Term.Err] after [Term.Resign] or [Coordinator.Close].
//   - [ErrUnavailable]: the backend could not be reached or answered with an
//     error; the call may be retried later.
//   - [ErrClosed]: the coordinator was closed.
//   - [ErrInvalidName]: the lease name is empty or has characters outside
//     [A-Za-z0-9_-].
//
// Context errors returned by a call stay recognisable with errors.Is.
//
// # Capabilities
//
// Optional abilities are separate interfaces found by type assertion:
//
//   - [HolderReader]: report the current holder and token of a lease without
//     campaigning (metrics, tests). Both backends implement it.
//
// Backends differ in what a "killed" holder means: localcoord lives in one
// process, so a lease only expires when its holder abandons it without
// resigning (a test hook standing in for a crash); natscoord leases expire
// when renewals stop reaching the NATS server.
package coord
