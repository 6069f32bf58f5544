package limits

import (
	"testing"
)

// BenchmarkAllowRequest measures one request-rate check of a limited tenant, from parallel
// goroutines as the API would call it.
func BenchmarkAllowRequest(b *testing.B) {
	f := newFixture(b, Config{}, map[string]string{"acme": "database: acme\nlimits: {requests_per_second: 1000000000, burst: 1000000000}\n"})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			f.lim.AllowRequest(b.Context(), "acme", "")
		}
	})
}
