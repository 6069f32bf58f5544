// Package mq is the contract of WaveHouse's durable queue: accepted rows
// wait here until the ingest worker has inserted them into ClickHouse, failed
// rows go to its dead-letter queue, and the SSE stream replays its history.
// It imports no backend SDK; backends live in embeddedmq (a NATS server
// inside the process) and natsmq (an external NATS JetStream cluster), both
// built on the shared JetStream code in jsmq.
//
// # Semantics
//
// A record is the rows of one request for one tenant and table. Publish
// returns after the record is durable. Concurrent publishes for one table
// are coalesced into one stored message, a frame, so one fsync covers many
// requests; each record keeps its own identity: its Position (frame
// sequence plus index), headers, idempotency key and, when it fails, its own
// dead-letter entry. A record with an idempotency key travels in a frame of
// its own carrying the key as the JetStream message id, so a repeat within
// the dedupe window stores nothing and returns the first position.
//
// A table maps to one partition (PartitionOf); each partition is one stream,
// so the stream sequence totally orders a table's records. Frames carry
// records of one tenant/table only: one delivery is one insert unit and is
// acknowledged as a whole, once all its records are inserted or
// dead-lettered. Delivery is at least once.
//
// Trim and TrimToFit never remove a frame above the ack floor of a durable
// consumer, so retention cannot lose rows that were not inserted. History is
// an upper bound: TrimToFit cuts acknowledged history short when a stream
// holds more than a share of its byte bound, so retained history cannot fill
// the stream and refuse new rows.
//
// Both JetStream backends also keep, in a KV bucket of their own, the last
// schema the api read for each table (Schemas), so validation survives a
// store outage across process restarts; and the ingest writer's batch-plan
// journal (Journal).
//
// # Errors
//
// ErrUnavailable (server unreachable; publishes fail fast instead of being
// buffered), ErrQueueFull (a byte budget is exhausted; ErrStreamFull names a
// stream's bound, ErrTenantBudget the tenant's budget, both wrap it),
// ErrClosed (after Close), ErrDeliveryEnded (a subscription will deliver no
// more), ErrSettled (a delivery settled twice), ErrInvalid, ErrTooLarge,
// ErrNotFound, ErrTopology. Backends wrap the SDK cause with %w.
//
// # Capabilities
//
// The embedded backend enforces a per-tenant byte budget of unacknowledged
// records; the external backend relies on the stream's max_bytes only (a
// per-tenant budget needs shared state across api processes). See the
// mqtest Caps flags for what each backend's suite run exercises.
package mq
