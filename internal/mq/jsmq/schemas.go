package jsmq

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// The schema bucket (Names.SchemaBucket) holds one key per table, the latest schema the api
// read from the store: "s.<tenant>.<database>.<table>", each name base64url-encoded (KV keys
// allow only [-/_=.A-Za-z0-9], and a name may be empty or hold dots). History 1: only the
// latest value is kept.

var (
	_ mq.Schemas = (*Queue)(nil)
	_ mq.Schemas = (*Handle)(nil)
)

func schemaKey(k mq.SchemaKey) (string, error) {
	if k.Table == "" || k.Database == "" {
		return "", fmt.Errorf("%w: schema key without database or table", mq.ErrInvalid)
	}
	enc := base64.RawURLEncoding.EncodeToString
	// "=" never appears in raw base64url, so it marks an empty tenant unambiguously.
	tenant := enc([]byte(k.Tenant))
	if tenant == "" {
		tenant = "="
	}
	return "s." + tenant + "." + enc([]byte(k.Database)) + "." + enc([]byte(k.Table)), nil
}

// schemas returns the schema bucket, opening it on first use.
func (q *Queue) schemas(ctx context.Context) (jetstream.KeyValue, error) {
	q.mu.Lock()
	kv := q.schemaKV
	q.mu.Unlock()
	if kv != nil {
		return kv, nil
	}
	err := q.rpc(ctx, func(ctx context.Context) error {
		var err error
		kv, err = q.js.KeyValue(ctx, q.names.SchemaBucket())
		return err
	})
	if err != nil {
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, fmt.Errorf("%w: key-value bucket %s is missing: %w", mq.ErrTopology, q.names.SchemaBucket(), err)
		}
		return nil, err
	}
	q.mu.Lock()
	q.schemaKV = kv
	q.mu.Unlock()
	return kv, nil
}

// PutSchema implements mq.Schemas.
func (q *Queue) PutSchema(ctx context.Context, key mq.SchemaKey, schema []byte) error {
	k, err := schemaKey(key)
	if err != nil {
		return err
	}
	if err := q.checkConn(); err != nil {
		return err
	}
	kv, err := q.schemas(ctx)
	if err != nil {
		return err
	}
	val := append([]byte(nil), schema...)
	return q.rpc(ctx, func(ctx context.Context) error {
		_, err := kv.Put(ctx, k, val)
		return err
	})
}

// GetSchema implements mq.Schemas.
func (q *Queue) GetSchema(ctx context.Context, key mq.SchemaKey) ([]byte, error) {
	k, err := schemaKey(key)
	if err != nil {
		return nil, err
	}
	if err := q.checkConn(); err != nil {
		return nil, err
	}
	kv, err := q.schemas(ctx)
	if err != nil {
		return nil, err
	}
	var val []byte
	err = q.rpc(ctx, func(ctx context.Context) error {
		e, err := kv.Get(ctx, k)
		if err != nil {
			return err
		}
		val = e.Value()
		return nil
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w: no schema kept for %s.%s (tenant %q)", mq.ErrNotFound, key.Database, key.Table, key.Tenant)
	}
	return val, err
}

// PutSchema implements mq.Schemas.
func (h *Handle) PutSchema(ctx context.Context, key mq.SchemaKey, schema []byte) error {
	q, err := h.Queue()
	if err != nil {
		return err
	}
	return q.PutSchema(ctx, key, schema)
}

// GetSchema implements mq.Schemas.
func (h *Handle) GetSchema(ctx context.Context, key mq.SchemaKey) ([]byte, error) {
	q, err := h.Queue()
	if err != nil {
		return nil, err
	}
	return q.GetSchema(ctx, key)
}
