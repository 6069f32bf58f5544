package settings

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	hashA = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
	hashB = "fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9"
)

var epoch = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// write creates dir/rel with content, making parent directories.
func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

const acmeYAML = `database: acme_db
clickhouse:
  addrs: ["ch1:9000", "ch2:9000"]
  user: acme
keys:
  - id: a1b2c3d4e5f6
    hash: ` + hashA + `
    scopes: [ingest, query]
    tables: [events]
    expires: 2027-03-01
  - {id: 0a0b0c0d0e0f, hash: "sha256:` + hashB + `", scopes: [admin], limits: {requests_per_second: 5}}
limits:
  requests_per_second: 100
  rows_per_second: 50000
  burst: 200
  max_concurrent_queries: 4
  max_result_rows: -1
  max_result_bytes: 1048576
  max_execution_time: 1m30s
  cache_ttl: 1d
  queue_max_bytes: 1048576
dedupe:
  retention: 7d
`

func TestLoadValid(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tenants/acme.yaml", acmeYAML)
	write(t, dir, "tenants/globex/tenant.yaml", "database: globex\n")
	write(t, dir, "tenants/globex/pipes/top_pages.sql", "SELECT 1")
	write(t, dir, "tenants/.acme.yaml.swp", "garbage")
	snap, err := Load(dir, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.TenantNames(); strings.Join(got, ",") != "acme,globex" {
		t.Fatalf("tenants = %v", got)
	}
	acme, _ := snap.Tenant("acme")
	if acme.Database != "acme_db" || acme.ClickHouse == nil || len(acme.ClickHouse.Addrs) != 2 {
		t.Fatalf("acme = %+v", acme)
	}
	want := Limits{RequestsPerSecond: 100, RowsPerSecond: 50000, Burst: 200, MaxConcurrentQueries: 4, QueueMaxBytes: 1 << 20,
		MaxResultRows: NoLimit, MaxResultBytes: 1 << 20, MaxExecutionTime: Duration(90 * time.Second), CacheTTL: Duration(24 * time.Hour)}
	if acme.Limits != want {
		t.Fatalf("limits = %+v, want %+v", acme.Limits, want)
	}
	if got := acme.Limits.WithDefaults(Limits{MaxResultRows: 9, MaxConcurrentQueries: 16, CacheTTL: Duration(time.Minute)}); got.MaxResultRows != 0 ||
		got.MaxConcurrentQueries != 4 || got.CacheTTL != Duration(24*time.Hour) || got.MaxExecutionTime != Duration(90*time.Second) {
		t.Fatalf("resolved limits = %+v, want -1 to lift the default and the tenant's values to win", got)
	}
	if got := (Limits{}).WithDefaults(Limits{MaxResultRows: 9, MaxResultBytes: NoLimit}); got.MaxResultRows != 9 || got.MaxResultBytes != 0 {
		t.Fatalf("unset limits = %+v, want the defaults (-1 default: no limit)", got)
	}
	if acme.Dedupe.Retention != 7*24*time.Hour {
		t.Fatalf("retention = %v", acme.Dedupe.Retention)
	}
	k, owner, ok := snap.KeyByID("a1b2c3d4e5f6")
	if !ok || owner.Name != "acme" || k.Hash != hashA || !k.HasScope(ScopeQuery) || k.HasScope(ScopeAdmin) {
		t.Fatalf("key = %+v owner %v ok %v", k, owner, ok)
	}
	if !k.Expires.Equal(time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)) || k.Expired(epoch) || !k.Expired(k.Expires) {
		t.Fatalf("expires = %v", k.Expires)
	}
	k2, _, _ := snap.KeyByID("0a0b0c0d0e0f")
	if k2.Hash != hashB || k2.Limits == nil || k2.Limits.RequestsPerSecond != 5 {
		t.Fatalf("key 2 = %+v (sha256: prefix stripped, per-key limits)", k2)
	}
	if snap.KeyCount() != 2 {
		t.Fatalf("key count = %d", snap.KeyCount())
	}
	g, _ := snap.Tenant("globex")
	if len(g.Pipes) != 1 || g.Pipes[0].Name != "top_pages" || g.Pipes[0].SQL != "SELECT 1" || g.Pipes[0].File != "tenants/globex/pipes/top_pages.sql" {
		t.Fatalf("pipes = %+v", g.Pipes)
	}
	if _, _, ok := snap.KeyByID("ffffffffffff"); ok {
		t.Fatal("unknown key id found")
	}
	if snap.Fingerprint == "" || !snap.LoadedAt.Equal(epoch) {
		t.Fatalf("fingerprint %q loaded %v", snap.Fingerprint, snap.LoadedAt)
	}
}

func TestLoadEmptyAndMissing(t *testing.T) {
	dir := t.TempDir()
	snap, err := Load(dir, epoch)
	if err != nil || snap.KeyCount() != 0 || len(snap.TenantNames()) != 0 {
		t.Fatalf("empty dir: %v %v", snap, err)
	}
	if _, err := Load(filepath.Join(dir, "nope"), epoch); err == nil || errors.Is(err, ErrInvalid) {
		t.Fatalf("missing dir: %v", err)
	}
}

// TestLoadFindings is the validation matrix: each case must produce a finding at file:line naming
// the key, and all findings of a directory are reported at once.
func TestLoadFindings(t *testing.T) {
	cases := []struct {
		name, file, content string
		want                []string // substrings of one finding each
	}{
		{"unknown top key", "tenants/a.yaml", "database: a\ndatabse: b\n", []string{`tenants/a.yaml:2: unknown key "databse"`}},
		{"unknown nested key", "tenants/a.yaml", "database: a\nlimits:\n  rps: 3\n", []string{`tenants/a.yaml:3: unknown key "rps"`}},
		{"unknown key field", "tenants/a.yaml", "database: a\nkeys:\n  - id: a1b2c3d4e5f6\n    hash: " + hashA + "\n    scopes: [query]\n    scope: [x]\n", []string{`tenants/a.yaml:6: unknown key "scope"`}},
		{"missing database", "tenants/a.yaml", "limits: {}\n", []string{"tenants/a.yaml:1: database: missing"}},
		{"empty file", "tenants/a.yaml", "", []string{"tenants/a.yaml: database: missing"}},
		{"bad database", "tenants/a.yaml", "database: a-b\n", []string{`tenants/a.yaml:1: database: "a-b"`}},
		{"bad tenant name", "tenants/Acme.yaml", "database: a\n", []string{`tenant name "Acme"`}},
		{"bad tenant folder", "tenants/a-b/tenant.yaml", "database: a\n", []string{`tenant name "a-b"`}},
		{"stray file", "tenants/notes.txt", "x", []string{"tenants/notes.txt: not a tenant file"}},
		{"bad yaml", "tenants/a.yaml", "database: [a\n", []string{"tenants/a.yaml"}},
		{"wrong type", "tenants/a.yaml", "database: a\nlimits:\n  burst: lots\n", []string{"tenants/a.yaml:3: cannot unmarshal"}},
		{"bad key id", "tenants/a.yaml", "database: a\nkeys:\n  - {id: AB, hash: " + hashA + ", scopes: [query]}\n", []string{`tenants/a.yaml:3: keys[0].id: "AB"`}},
		{"bad hash", "tenants/a.yaml", "database: a\nkeys:\n  - id: a1b2c3d4e5f6\n    hash: wh_a1b2c3d4e5f6_supersecretvalue\n    scopes: [query]\n", []string{"tenants/a.yaml:4: keys[0].hash: want the 64 lowercase hex"}},
		{"no scopes", "tenants/a.yaml", "database: a\nkeys:\n  - {id: a1b2c3d4e5f6, hash: " + hashA + "}\n", []string{"keys[0].scopes: missing"}},
		{"bad scope", "tenants/a.yaml", "database: a\nkeys:\n  - id: a1b2c3d4e5f6\n    hash: " + hashA + "\n    scopes:\n      - query\n      - write\n", []string{`tenants/a.yaml:7: keys[0].scopes[1]: unknown scope "write"`}},
		{"dup scope", "tenants/a.yaml", "database: a\nkeys:\n  - {id: a1b2c3d4e5f6, hash: " + hashA + ", scopes: [query, query]}\n", []string{`scope "query" appears twice`}},
		{"bad table", "tenants/a.yaml", "database: a\nkeys:\n  - {id: a1b2c3d4e5f6, hash: " + hashA + ", scopes: [query], tables: [\"x y\"]}\n", []string{`keys[0].tables[0]: "x y" is not a table name`}},
		{"bad expiry", "tenants/a.yaml", "database: a\nkeys:\n  - {id: a1b2c3d4e5f6, hash: " + hashA + ", scopes: [query], expires: soon}\n", []string{`keys[0].expires: "soon"`}},
		{"dup key id in tenant", "tenants/a.yaml", "database: a\nkeys:\n  - {id: a1b2c3d4e5f6, hash: " + hashA + ", scopes: [query]}\n  - {id: a1b2c3d4e5f6, hash: " + hashB + ", scopes: [query]}\n", []string{`tenants/a.yaml:4: keys[1].id: key id "a1b2c3d4e5f6" appears twice`}},
		{"negative limits", "tenants/a.yaml", "database: a\nlimits:\n  requests_per_second: -1\n  max_concurrent_queries: -2\n", []string{"tenants/a.yaml:3: limits.requests_per_second", "tenants/a.yaml:4: limits.max_concurrent_queries"}},
		{"negative query limits", "tenants/a.yaml", "database: a\nlimits:\n  max_result_rows: -2\n  max_result_bytes: -5\n  max_execution_time: -3s\n  cache_ttl: -1\n",
			[]string{"tenants/a.yaml:3: limits.max_result_rows: must be > 0, or -1", "tenants/a.yaml:4: limits.max_result_bytes", "tenants/a.yaml:5: limits.max_execution_time", "tenants/a.yaml:6: limits.cache_ttl"}},
		{"bad duration", "tenants/a.yaml", "database: a\nlimits:\n  max_execution_time: soon\n", []string{`tenants/a.yaml:3: invalid duration "soon"`}},
		{"query limits on a key", "tenants/a.yaml", "database: a\nkeys:\n  - {id: a1b2c3d4e5f6, hash: " + hashA + ", scopes: [query], limits: {max_result_rows: 5, max_concurrent_queries: 1}}\n",
			[]string{"keys[0].limits.max_result_rows: query limits are per tenant", "keys[0].limits.max_concurrent_queries: query limits are per tenant"}},
		{"burst without rate", "tenants/a.yaml", "database: a\nlimits:\n  burst: 5\n", []string{"limits.burst: set requests_per_second too"}},
		{"key limits", "tenants/a.yaml", "database: a\nkeys:\n  - {id: a1b2c3d4e5f6, hash: " + hashA + ", scopes: [query], limits: {rows_per_second: -3}}\n", []string{"keys[0].limits.rows_per_second"}},
		{"bad retention", "tenants/a.yaml", "database: a\ndedupe:\n  retention: forever\n", []string{"tenants/a.yaml:3: dedupe.retention"}},
		{"ch without addrs", "tenants/a.yaml", "database: a\nclickhouse:\n  user: u\n", []string{"clickhouse.addrs: missing"}},
		{"ch bad addr", "tenants/a.yaml", "database: a\nclickhouse:\n  addrs: [nohost]\n", []string{`clickhouse.addrs[0]: "nohost"`}},
		{"ch password file missing", "tenants/a.yaml", "database: a\nclickhouse:\n  addrs: [h:9000]\n  password_file: /nonexistent/pw\n", []string{"tenants/a.yaml:4: clickhouse.password_file"}},
		{"bad pipe name", "tenants/a/pipes/top.v2.sql", "SELECT 1", []string{`pipe name "top.v2"`}},
		{"stray pipe file", "tenants/a/pipes/top.txt", "SELECT 1", []string{"not a pipe file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, tc.file, tc.content)
			if strings.HasPrefix(tc.file, "tenants/a/pipes/") {
				write(t, dir, "tenants/a/tenant.yaml", "database: a\n")
			}
			_, err := Load(dir, epoch)
			var ie *InvalidError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want *InvalidError", err)
			}
			for _, w := range tc.want {
				found := false
				for _, f := range ie.Findings {
					found = found || strings.Contains(f.String(), w)
				}
				if !found {
					t.Errorf("no finding contains %q; got:\n%v", w, err)
				}
			}
		})
	}
}

func TestLoadReportsEveryFindingAtOnce(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tenants/a.yaml", "database: a\nbogus: 1\nkeys:\n  - {id: a1b2c3d4e5f6, hash: "+hashA+", scopes: [query]}\n")
	write(t, dir, "tenants/b.yaml", "database: b\nkeys:\n  - {id: a1b2c3d4e5f6, hash: "+hashB+", scopes: [nope]}\n")
	write(t, dir, "tenants/b/tenant.yaml", "database: b2\n")
	_, err := Load(dir, epoch)
	var ie *InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v", err)
	}
	for _, w := range []string{`tenants/a.yaml:2: unknown key "bogus"`, `unknown scope "nope"`, `key id "a1b2c3d4e5f6" is also used by tenant "a"`, `tenant "b" is also defined by tenants/b.yaml`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing finding %q in:\n%v", w, err)
		}
	}
}

func TestFindingsNeverQuoteHashValue(t *testing.T) {
	dir := t.TempDir()
	const secret = "wh_a1b2c3d4e5f6_0123456789abcdef0123456789abcdef"
	write(t, dir, "tenants/a.yaml", "database: a\nkeys:\n  - {id: a1b2c3d4e5f6, hash: "+secret+", scopes: [query]}\n")
	_, err := Load(dir, epoch)
	if err == nil || strings.Contains(err.Error(), "0123456789abcdef") {
		t.Fatalf("finding leaks the pasted secret or is missing: %v", err)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"90d": 90 * 24 * time.Hour, "36h": 36 * time.Hour, "1.5d": 36 * time.Hour, "15m": 15 * time.Minute} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "x", "3w"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) accepted", in)
		}
	}
}

// TestLoadSharedPipes reads settings_dir/pipes as pipes every tenant has, with or without a
// tenants directory, and reports a stray file there like any other finding.
func TestLoadSharedPipes(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "pipes/top.sql", "SELECT 1")
	write(t, dir, "pipes/.top.sql.swp", "garbage")
	snap, err := Load(dir, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.SharedPipes(); len(got) != 1 || got[0].Name != "top" || got[0].File != "pipes/top.sql" || got[0].SQL != "SELECT 1" {
		t.Fatalf("shared pipes: %+v", got)
	}
	before := snap.Fingerprint
	write(t, dir, "tenants/acme.yaml", "database: acme\n")
	write(t, dir, "pipes/top.sql", "SELECT 2")
	snap, err = Load(dir, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Fingerprint == before || snap.SharedPipes()[0].SQL != "SELECT 2" || len(snap.TenantNames()) != 1 {
		t.Fatalf("after edit: fingerprint %s, pipes %+v, tenants %v", snap.Fingerprint, snap.SharedPipes(), snap.TenantNames())
	}
	write(t, dir, "pipes/notes.txt", "x")
	if _, err := Load(dir, epoch); err == nil || !strings.Contains(err.Error(), "pipes/notes.txt: not a pipe file") {
		t.Fatalf("stray file: %v", err)
	}
}
