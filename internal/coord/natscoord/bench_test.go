package natscoord_test

import (
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// BenchmarkAcquireResign measures one full term: Get + Create to acquire,
// then Delete to resign (three round trips to the server).
func BenchmarkAcquireResign(b *testing.B) {
	srv := testsvc.NATSServer(b)
	cfg := testConfig
	cfg.Bucket = testsvc.UniqueName(b, "bench")
	dropBucket(b, srv.URL, cfg.Bucket)
	c, _ := newCoordinatorTB(b, srv.URL, cfg, "bench")
	ctx := b.Context()
	for b.Loop() {
		term, err := c.TryAcquire(ctx, "sweeper")
		if err != nil {
			b.Fatal(err)
		}
		if err := term.Resign(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
