package localcoord_test

import (
	"testing"

	"github.com/wavehouse/wavehouse/internal/coord/localcoord"
)

// BenchmarkAcquireResign measures one full in-process term.
func BenchmarkAcquireResign(b *testing.B) {
	c, err := localcoord.New(localcoord.Config{}, localcoord.Deps{Instance: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = c.Close(b.Context()) }()
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
