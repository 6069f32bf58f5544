package dedupetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// testIsolation commits one key and checks that keys differing in tenant or table, including
// ones whose naive "tenant/table/id" concatenations coincide, are independent records.
func testIsolation(t *testing.T, e *env) {
	s := e.h.Open(t)
	keys := []dedupe.Key{
		{Tenant: "t1", Table: "events", ID: "same"},
		{Tenant: "t2", Table: "events", ID: "same"},
		{Tenant: "t1", Table: "clicks", ID: "same"},
		{Tenant: "a/b", Table: "c", ID: "d"},
		{Tenant: "a", Table: "b/c", ID: "d"},
		{Tenant: "a", Table: "b", ID: "c/d"},
		{Tenant: "a%2Fb", Table: "c", ID: "d"},
		{Tenant: "a", Table: "b#c", ID: "d"},
		{Tenant: "a", Table: "b", ID: "c#d"},
		{Tenant: "a:b", Table: "c", ID: "d"},
		{Tenant: "a", Table: "b:c", ID: "d"},
	}
	assertIndependent(t, s, keys)
}

// testOddKeys checks that long and unusual keys round-trip and never collide with each other.
func testOddKeys(t *testing.T, e *env) {
	s := e.h.Open(t)
	kib := strings.Repeat("k", 1024)
	ids := []string{
		"plain",
		"ünïcödé-キー-🔑",
		"a/b/c",
		"/",
		"#",
		"#hash",
		":",
		"a:b:c",
		"%2F",
		"%",
		"with space",
		"tab\tand\nnewline",
		"nul\x00byte",
		"bad-utf8-\xff\xfe",
		"bad-utf8-\xff\xfd",
		kib,
		kib[:1023] + "x",
		strings.Repeat("/", 1024),
		strings.Repeat("/", 1023) + "#",
		strings.Repeat("é", 512),
		strings.Repeat("%", 1024),
	}
	keys := make([]dedupe.Key, 0, len(ids)+2)
	for _, id := range ids {
		keys = append(keys, dedupe.Key{Tenant: "tenant-ünï/#:", Table: "table:/#", ID: id})
	}
	keys = append(keys,
		dedupe.Key{Tenant: strings.Repeat("t", 200), Table: strings.Repeat("x", 200), ID: kib},
		dedupe.Key{Tenant: "t", Table: "x", ID: strings.Repeat("🔑", 256)},
	)
	assertIndependent(t, s, keys)
}

// assertIndependent claims and commits each key with its own response, then checks every key
// replays its own response and a different fingerprint is a mismatch, so no two keys share a
// record.
func assertIndependent(t *testing.T, s dedupe.Store, keys []dedupe.Key) {
	t.Helper()
	for i, k := range keys {
		res := reserve(t, s, k, fpA, lease)
		if res.Outcome != dedupe.OutcomeClaimed {
			t.Fatalf("key %d %v: outcome = %v, want claimed (collides with an earlier key)", i, k, res.Outcome)
		}
		commit(t, s, k, res.Claim.Token, resp(fmt.Sprintf("response-%d", i)), retention)
	}
	for i, k := range keys {
		res := reserve(t, s, k, fpA, lease)
		wantOutcome(t, res, dedupe.OutcomeDuplicate)
		wantResponse(t, res.Record.Response, resp(fmt.Sprintf("response-%d", i)))
		rec, err := s.Get(ctxFor(t), k)
		if err != nil {
			t.Fatalf("Get key %d: %v", i, err)
		}
		wantResponse(t, rec.Response, resp(fmt.Sprintf("response-%d", i)))
	}
}
