package mq

import "context"

// SchemaKey names one table whose schema is kept: the tenant, the store database and the table.
type SchemaKey struct {
	Tenant, Database, Table string
}

// Schemas keeps the last known schema of each table next to the queue, where every api process
// of a deployment can read it, so that ingest validates (and accepts durably) while the store
// is unreachable, even in a process that booted during the outage. The schema is opaque bytes
// to the queue (the schema cache encodes it). It is implemented by both JetStream backends; the
// wiring finds it by type-asserting the Queue.
type Schemas interface {
	// PutSchema stores schema as the latest of key, replacing any earlier one. It returns once
	// durable. schema is copied before it returns.
	PutSchema(ctx context.Context, key SchemaKey, schema []byte) error
	// GetSchema returns the latest schema stored for key, or an error wrapping ErrNotFound when
	// none was stored. The caller owns the returned slice.
	GetSchema(ctx context.Context, key SchemaKey) ([]byte, error)
}
