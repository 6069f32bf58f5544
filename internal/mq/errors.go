package mq

import (
	"errors"
	"fmt"
)

// Sentinel errors of the queue layer. Backends wrap them with %w, keeping the
// SDK error as the cause, so callers branch with errors.Is.
var (
	// ErrUnavailable reports that the queue server cannot be reached or did
	// not answer in time. The operation may be retried later; a publish that
	// failed with it may or may not have been stored.
	ErrUnavailable = errors.New("mq: unavailable")
	// ErrQueueFull reports that the queue refuses new records for lack of
	// room: a stream's bound (ErrStreamFull), the tenant's budget
	// (ErrTenantBudget), or the server's storage limits. Retry after
	// consumers caught up.
	ErrQueueFull = errors.New("mq: queue full")
	// ErrStreamFull reports that a stream reached its byte (or message)
	// bound: new publishes are refused (discard new) until the sweeper
	// trims acknowledged history or consumers catch up. It wraps
	// ErrQueueFull.
	ErrStreamFull = fmt.Errorf("%w: stream bound reached", ErrQueueFull)
	// ErrTenantBudget reports that the tenant's byte budget of records not
	// yet acknowledged is exhausted. It wraps ErrQueueFull.
	ErrTenantBudget = fmt.Errorf("%w: tenant budget exhausted", ErrQueueFull)
	// ErrClosed is returned by every call made after Close.
	ErrClosed = errors.New("mq: closed")
	// ErrDeliveryEnded reports that a subscription will deliver no more
	// messages: the queue was closed or the durable consumer was deleted.
	ErrDeliveryEnded = errors.New("mq: delivery ended")
	// ErrSettled is returned when a delivery that was already acknowledged,
	// negatively acknowledged, terminated or dead-lettered is settled again.
	ErrSettled = errors.New("mq: delivery already settled")
	// ErrInvalid reports an invalid argument: an empty tenant or table, a
	// partition out of range, a malformed position.
	ErrInvalid = errors.New("mq: invalid argument")
	// ErrTooLarge reports a record larger than the queue accepts.
	ErrTooLarge = errors.New("mq: record too large")
	// ErrNotFound reports that a dead-letter entry or a kept schema does not
	// exist.
	ErrNotFound = errors.New("mq: not found")
	// ErrTopology reports that the JetStream topology (streams, consumers,
	// KV buckets) is missing or differs from what WaveHouse expects.
	ErrTopology = errors.New("mq: topology mismatch")
)
