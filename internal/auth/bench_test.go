package auth

import (
	"net/http/httptest"
	"testing"
)

// BenchmarkAuthenticate measures one bearer-key check (parse, lookup, SHA-256, constant-time
// compare, expiry) against a settings snapshot.
func BenchmarkAuthenticate(b *testing.B) {
	f := newFixture(b, false, twoTenants)
	r := httptest.NewRequest("POST", "/v1/ingest/events", nil)
	r.Header.Set("Authorization", "Bearer "+f.keys["all"].Token)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := f.auth.Authenticate(r); err != nil {
			b.Fatal(err)
		}
	}
}
