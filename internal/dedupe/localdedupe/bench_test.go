package localdedupe_test

import (
	"testing"

	"github.com/wavehouse/wavehouse/internal/dedupe/dedupetest"
	"github.com/wavehouse/wavehouse/internal/dedupe/localdedupe"
)

func BenchmarkStore(b *testing.B) {
	s, err := localdedupe.New(localdedupe.Config{Dir: b.TempDir()}, localdedupe.Deps{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(b.Context()) })
	dedupetest.Bench(b, s)
}
