package mqtest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// testSchemasKeepLatest checks the schema store: nothing kept reads as ErrNotFound, a put is read
// back by every key that names the same table and by no other (names with dots, empty tenants
// and non-ASCII bytes included), and a later put replaces an earlier one.
func testSchemasKeepLatest(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{}).Queue
	s, ok := q.(mq.Schemas)
	if !ok {
		t.Fatalf("%T does not implement mq.Schemas", q)
	}
	ctx := ctxT(t)
	keys := []mq.SchemaKey{
		{Tenant: "", Database: "default", Table: "events"},
		{Tenant: "acme", Database: "default", Table: "events"},
		{Tenant: "acme", Database: "default.events", Table: "x"},
		{Tenant: "acme", Database: "default", Table: "events.x"},
		{Tenant: "acme", Database: "db", Table: "tâble with spaces"},
	}
	for _, k := range keys {
		if _, err := s.GetSchema(ctx, k); !errors.Is(err, mq.ErrNotFound) {
			t.Fatalf("GetSchema %+v before any put: %v, want mq.ErrNotFound", k, err)
		}
	}
	for i, k := range keys {
		if err := s.PutSchema(ctx, k, []byte{byte('a' + i)}); err != nil {
			t.Fatalf("PutSchema %+v: %v", k, err)
		}
	}
	for i, k := range keys {
		got, err := s.GetSchema(ctx, k)
		if err != nil || !bytes.Equal(got, []byte{byte('a' + i)}) {
			t.Fatalf("GetSchema %+v = %q, %v; want %q", k, got, err, []byte{byte('a' + i)})
		}
	}
	buf := []byte("v2")
	if err := s.PutSchema(ctx, keys[1], buf); err != nil {
		t.Fatalf("PutSchema again: %v", err)
	}
	buf[0] = 'X' // the queue copied it
	if got, err := s.GetSchema(ctx, keys[1]); err != nil || string(got) != "v2" {
		t.Fatalf("GetSchema after a second put = %q, %v; want v2", got, err)
	}
	if err := s.PutSchema(ctx, mq.SchemaKey{Tenant: "acme", Database: "db"}, []byte("x")); !errors.Is(err, mq.ErrInvalid) {
		t.Fatalf("PutSchema without a table: %v, want mq.ErrInvalid", err)
	}
}
