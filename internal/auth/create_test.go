package auth

import (
	"slices"
	"testing"
	"time"
)

func TestParseScopes(t *testing.T) {
	got, err := ParseScopes("ingest, query,stream,admin")
	if err != nil || !slices.Equal(got, []Scope{ScopeIngest, ScopeQuery, ScopeStream, ScopeAdmin}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", ",", "write", "query,query"} {
		if _, err := ParseScopes(bad); err == nil {
			t.Errorf("ParseScopes(%q) accepted", bad)
		}
	}
}

func TestParseTables(t *testing.T) {
	got, err := ParseTables("events, pages")
	if err != nil || !slices.Equal(got, []string{"events", "pages"}) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := ParseTables("a;drop"); err == nil {
		t.Fatal("bad table accepted")
	}
}

func TestParseExpiry(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := map[string]time.Time{
		"":                     {},
		"90d":                  now.Add(90 * 24 * time.Hour),
		"36h":                  now.Add(36 * time.Hour),
		"2027-03-01":           time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC),
		"2027-03-01T10:00:00Z": time.Date(2027, 3, 1, 10, 0, 0, 0, time.UTC),
	}
	for in, want := range cases {
		if got, err := ParseExpiry(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseExpiry(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"-1d", "0d", "2020-01-01", "tomorrow"} {
		if _, err := ParseExpiry(bad, now); err == nil {
			t.Errorf("ParseExpiry(%q) accepted", bad)
		}
	}
}
