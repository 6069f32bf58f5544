package cachetest

import (
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache"
)

func testTenantIsolation(t *testing.T, h *Harness) {
	c := open(t, h)
	deps := cache.Deps{Tables: []string{"events"}}
	// Tenants whose names would collide under naive concatenation with a separator.
	pairs := [][2]string{{"acme", "globex"}, {"a:b", "a"}, {"a", "a%3Ab"}, {"{x}", "x"}, {"t/1", "t"}}
	for _, p := range pairs {
		a, b := p[0], p[1]
		ka := queryKey(t, c, a, "SELECT count() FROM events", deps)
		mustSet(t, c, ka, []byte("rows of "+a), time.Minute)
		kb := queryKey(t, c, b, "SELECT count() FROM events", deps)
		wantMiss(t, c, kb, "tenant "+b+" reading what tenant "+a+" cached")

		before := mustVersions(t, c, b, deps)
		mustBumpTable(t, c, a, "events")
		if err := c.BumpTenant(t.Context(), a); err != nil {
			t.Fatalf("BumpTenant: %v", err)
		}
		after := mustVersions(t, c, b, deps)
		if before.Epoch != after.Epoch || before.Tables["events"] != after.Tables["events"] {
			t.Fatalf("bumping tenant %q moved tenant %q's versions: %+v -> %+v", a, b, before, after)
		}
	}
}

func testVersionTokens(t *testing.T, h *Harness) {
	c := open(t, h)
	const tenant = "tenant_tokens"
	deps := cache.Deps{Tables: []string{"a", "b"}}
	v0 := mustVersions(t, c, tenant, deps)
	if v0.Epoch == 0 || v0.Tables["a"] == 0 || v0.Tables["b"] == 0 || len(v0.Tables) != 2 {
		t.Fatalf("versions of a new tenant = %+v; want both tables present and no version 0 (a missing version is a fresh token, never 0)", v0)
	}
	if again := mustVersions(t, c, tenant, deps); again.Epoch != v0.Epoch || again.Tables["a"] != v0.Tables["a"] || again.Tables["b"] != v0.Tables["b"] {
		t.Fatalf("a second read without a bump = %+v, first %+v; want the same tokens", again, v0)
	}
	all0 := mustVersions(t, c, tenant, cache.Deps{AllTables: true})
	if !all0.AllTables || all0.Writes == 0 {
		t.Fatalf("Versions(AllTables) = %+v; want AllTables recorded and a write token", all0)
	}
	seen := map[uint64]bool{v0.Tables["a"]: true}
	for i := range 3 {
		mustBumpTable(t, c, tenant, "a")
		v := mustVersions(t, c, tenant, deps)
		if seen[v.Tables["a"]] {
			t.Fatalf("table a after bump %d = %d, a token it held before; want a new one", i+1, v.Tables["a"])
		}
		seen[v.Tables["a"]] = true
		if v.Tables["b"] != v0.Tables["b"] || v.Epoch != v0.Epoch {
			t.Fatalf("bumping table a moved b or the epoch: %+v -> %+v", v0, v)
		}
	}
	v1 := mustVersions(t, c, tenant, deps)
	all1 := mustVersions(t, c, tenant, cache.Deps{AllTables: true})
	if all1.Writes == all0.Writes {
		t.Fatalf("write token after table bumps = %d, unchanged; want a new one", all1.Writes)
	}
	if err := c.BumpTenant(t.Context(), tenant); err != nil {
		t.Fatalf("BumpTenant: %v", err)
	}
	v2 := mustVersions(t, c, tenant, deps)
	if v2.Epoch == v1.Epoch || v2.Epoch == v0.Epoch {
		t.Fatalf("epoch after BumpTenant = %d, before %d; want a new token", v2.Epoch, v1.Epoch)
	}
}

// testLostVersions: versions the backend lost (LoseVersions) read as fresh tokens, so neither a
// fill from before an insert nor one from after it is served, and neither is after the next
// insert (a counter restarting from nothing would come back to an older fill's version).
func testLostVersions(t *testing.T, h *Harness) {
	c := open(t, h)
	const tenant, sql = "tenant_lost", "SELECT count() FROM events"
	for _, deps := range []cache.Deps{{Tables: []string{"events"}}, {AllTables: true}} {
		before := cache.NewKey(tenant, sql, nil, mustVersions(t, c, tenant, deps))
		mustSet(t, c, before, []byte("before"), time.Minute)
		mustBumpTable(t, c, tenant, "events")
		after := cache.NewKey(tenant, sql, nil, mustVersions(t, c, tenant, deps))
		mustSet(t, c, after, []byte("after"), time.Minute)
		h.LoseVersions(t, tenant)
		wantMiss(t, c, cache.NewKey(tenant, sql, nil, mustVersions(t, c, tenant, deps)), "lookup after the versions were lost")
		mustBumpTable(t, c, tenant, "events")
		wantMiss(t, c, cache.NewKey(tenant, sql, nil, mustVersions(t, c, tenant, deps)), "lookup after the versions were lost and an insert")
	}
}

func testBumpOrphans(t *testing.T, h *Harness) {
	c := open(t, h)
	const tenant = "tenant_orphans"
	onA := cache.Deps{Tables: []string{"a"}}
	onB := cache.Deps{Tables: []string{"b"}}
	onAll := cache.Deps{AllTables: true}
	fill := func(sql string, deps cache.Deps) cache.Key {
		k := queryKey(t, c, tenant, sql, deps)
		mustSet(t, c, k, []byte(sql), time.Minute)
		wantHit(t, c, queryKey(t, c, tenant, sql, deps), []byte(sql), "lookup right after the fill")
		return k
	}
	fill("SELECT * FROM a", onA)
	fill("SELECT * FROM b", onB)
	fill("SELECT * FROM numbers(3)", onAll)

	mustBumpTable(t, c, tenant, "a")
	wantMiss(t, c, queryKey(t, c, tenant, "SELECT * FROM a", onA), "query over a after a's bump")
	wantHit(t, c, queryKey(t, c, tenant, "SELECT * FROM b", onB), []byte("SELECT * FROM b"), "query over b after a's bump")
	wantMiss(t, c, queryKey(t, c, tenant, "SELECT * FROM numbers(3)", onAll), "query over unknown tables after a's bump")

	fill("SELECT * FROM a", onA)
	if err := c.BumpTenant(t.Context(), tenant); err != nil {
		t.Fatalf("BumpTenant: %v", err)
	}
	wantMiss(t, c, queryKey(t, c, tenant, "SELECT * FROM a", onA), "query over a after the tenant bump")
	wantMiss(t, c, queryKey(t, c, tenant, "SELECT * FROM b", onB), "query over b after the tenant bump")
}

func testBumpDuringQuery(t *testing.T, h *Harness) {
	c := open(t, h)
	const tenant, sql = "tenant_race", "SELECT max(ts) FROM events"
	deps := cache.Deps{Tables: []string{"events"}}
	for _, all := range []bool{false, true} {
		deps.AllTables = all
		before := mustVersions(t, c, tenant, deps) // read before the query runs
		mustBumpTable(t, c, tenant, "events")      // an insert lands while the query runs
		// The query returns rows from before the insert and files them under the old versions.
		mustSet(t, c, cache.NewKey(tenant, sql, nil, before), []byte("stale"), time.Minute)
		after := mustVersions(t, c, tenant, deps)
		wantMiss(t, c, cache.NewKey(tenant, sql, nil, after), "lookup after a bump that landed during the query")
	}
}

func testShared(t *testing.T, h *Harness) {
	a, b := open(t, h), open(t, h)
	const tenant = "tenant_shared"
	deps := cache.Deps{Tables: []string{"events"}}
	k := queryKey(t, a, tenant, "SELECT 1 FROM events", deps)
	mustSet(t, a, k, []byte("from a"), time.Minute)
	wantHit(t, b, k, []byte("from a"), "instance b reading instance a's fill")

	before := mustVersions(t, b, tenant, deps)
	mustBumpTable(t, a, tenant, "events")
	after := mustVersions(t, b, tenant, deps)
	if after.Tables["events"] == before.Tables["events"] {
		t.Fatalf("instance b sees events at %d after instance a bumped it from %d", after.Tables["events"], before.Tables["events"])
	}
	wantMiss(t, b, queryKey(t, b, tenant, "SELECT 1 FROM events", deps), "instance b after instance a's bump")
}

func testNotShared(t *testing.T, h *Harness) {
	a, b := open(t, h), open(t, h)
	const tenant = "tenant_private"
	deps := cache.Deps{Tables: []string{"events"}}
	before := mustVersions(t, b, tenant, deps)
	mustBumpTable(t, a, tenant, "events")
	if v := mustVersions(t, b, tenant, deps); v.Tables["events"] != before.Tables["events"] {
		t.Fatalf("a backend without the Shared capability shares bumps: %+v -> %+v", before, v)
	}
}
