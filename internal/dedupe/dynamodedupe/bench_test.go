package dynamodedupe_test

import (
	"testing"

	"github.com/wavehouse/wavehouse/internal/dedupe/dedupetest"
	"github.com/wavehouse/wavehouse/internal/dedupe/dynamodedupe"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

func BenchmarkStore(b *testing.B) {
	srv := testsvc.DynamoDBServer(b)
	cfg := testConfig(b, srv.Endpoint)
	s, err := dynamodedupe.New(cfg, dynamodedupe.Deps{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(b.Context()) })
	if err := s.EnsureTable(b.Context()); err != nil {
		b.Fatal(err)
	}
	dedupetest.Bench(b, s)
}
