package settings

import (
	"fmt"
	"math"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

var (
	tenantNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
	databaseRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)
	tableRE      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	pipeNameRE   = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{0,127}$`) // as internal/query/pipes accepts
	keyIDRE      = regexp.MustCompile(`^[a-z0-9]{8,32}$`)
	hashRE       = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ValidTenantName reports whether name is a valid tenant name ([a-z][a-z0-9_]{0,62}).
func ValidTenantName(name string) bool { return tenantNameRE.MatchString(name) }

// ValidKeyID reports whether id is a valid key id ([a-z0-9]{8,32}).
func ValidKeyID(id string) bool { return keyIDRE.MatchString(id) }

// ValidTableName reports whether name is a table name a key may be restricted to.
func ValidTableName(name string) bool { return tableRE.MatchString(name) }

type findingAt func(key string, path ...any) Finding

func validateTenant(name, rel string, tf *tenantFile, at findingAt) (*Tenant, []Finding) {
	var fs []Finding
	add := func(f Finding, format string, args ...any) {
		f.Message = fmt.Sprintf(format, args...)
		fs = append(fs, f)
	}
	t := &Tenant{Name: name, File: rel, Database: tf.Database, ClickHouse: tf.ClickHouse, Limits: tf.Limits}
	switch {
	case tf.Database == "":
		add(at("database"), "missing: name the tenant's ClickHouse database")
	case !databaseRE.MatchString(tf.Database):
		add(at("database", "database"), "%q: use [A-Za-z_][A-Za-z0-9_]{0,62}", tf.Database)
	}
	if ch := tf.ClickHouse; ch != nil {
		if len(ch.Addrs) == 0 {
			add(at("clickhouse.addrs", "clickhouse"), "missing: list the server's native host:port addresses")
		}
		for i, a := range ch.Addrs {
			if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
				add(at(fmt.Sprintf("clickhouse.addrs[%d]", i), "clickhouse", "addrs", i), "%q: want host:port", a)
			}
		}
		if ch.PasswordFile != "" {
			if st, err := os.Stat(ch.PasswordFile); err != nil || st.IsDir() {
				add(at("clickhouse.password_file", "clickhouse", "password_file"), "%q is not a readable file", ch.PasswordFile)
			}
		}
	}
	fs = append(fs, validateLimits(&tf.Limits, true, "limits", at, "limits")...)
	if tf.Dedupe.Retention != "" {
		d, err := parseDuration(tf.Dedupe.Retention)
		switch {
		case err != nil:
			add(at("dedupe.retention", "dedupe", "retention"), "%v: e.g. 24h or 7d", err)
		case d < 0:
			add(at("dedupe.retention", "dedupe", "retention"), "must not be negative")
		}
		t.Dedupe.Retention = d
	}
	if tf.JWT != nil {
		j, more := validateJWT(tf.JWT, at)
		t.JWT, fs = j, append(fs, more...)
	}
	if tf.CORS != nil {
		c, more := validateCORS(tf.CORS, at)
		t.CORS, fs = c, append(fs, more...)
	}
	seen := map[string]bool{}
	for i, kf := range tf.Keys {
		k, more := validateKey(i, kf, at)
		fs = append(fs, more...)
		if seen[kf.ID] {
			add(at(fmt.Sprintf("keys[%d].id", i), "keys", i, "id"), "key id %q appears twice", kf.ID)
			continue
		}
		seen[kf.ID] = true
		t.Keys = append(t.Keys, k)
	}
	return t, fs
}

func validateKey(i int, kf keyFile, at findingAt) (Key, []Finding) {
	var fs []Finding
	p := fmt.Sprintf("keys[%d]", i)
	add := func(f Finding, format string, args ...any) {
		f.Message = fmt.Sprintf(format, args...)
		fs = append(fs, f)
	}
	k := Key{ID: kf.ID, Hash: strings.TrimPrefix(kf.Hash, "sha256:"), Tables: kf.Tables, Limits: kf.Limits}
	if !keyIDRE.MatchString(kf.ID) {
		add(at(p+".id", "keys", i, "id"), "%q: want [a-z0-9]{8,32} (the <keyid> of wh_<keyid>_<secret>)", kf.ID)
	}
	if !hashRE.MatchString(k.Hash) {
		// Never quote the value: a secret pasted here by mistake must not reach a log.
		add(at(p+".hash", "keys", i, "hash"), "want the 64 lowercase hex digits of sha256(secret) printed by `wavehouse keys create`")
	}
	if len(kf.Scopes) == 0 {
		add(at(p+".scopes", "keys", i), "missing: list at least one of ingest, query, stream, admin")
	}
	for j, s := range kf.Scopes {
		sc := Scope(s)
		switch {
		case !sc.Valid():
			add(at(fmt.Sprintf("%s.scopes[%d]", p, j), "keys", i, "scopes", j), "unknown scope %q: want ingest, query, stream or admin", s)
		case slices.Contains(k.Scopes, sc):
			add(at(fmt.Sprintf("%s.scopes[%d]", p, j), "keys", i, "scopes", j), "scope %q appears twice", s)
		default:
			k.Scopes = append(k.Scopes, sc)
		}
	}
	for j, tb := range kf.Tables {
		if !tableRE.MatchString(tb) {
			add(at(fmt.Sprintf("%s.tables[%d]", p, j), "keys", i, "tables", j), "%q is not a table name", tb)
		}
	}
	if kf.Expires != "" {
		e, err := parseExpiry(kf.Expires)
		if err != nil {
			add(at(p+".expires", "keys", i, "expires"), "%q: want RFC 3339 (2027-03-01T00:00:00Z) or a date (2027-03-01)", kf.Expires)
		}
		k.Expires = e
	}
	if kf.Limits != nil {
		fs = append(fs, validateLimits(kf.Limits, false, p+".limits", at, "keys", i, "limits")...)
	}
	return k, fs
}

func parseExpiry(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Parse(time.DateOnly, s)
}

// validateLimits checks the limits of a tenant (tenant true) or of a key, which may only tighten
// the rates.
func validateLimits(l *Limits, tenant bool, key string, at findingAt, p ...any) []Finding {
	var fs []Finding
	check := func(ok bool, field, msg string) {
		if !ok {
			f := at(key+"."+field, append(slices.Clone(p), field)...)
			f.Message = msg
			fs = append(fs, f)
		}
	}
	finite := func(v float64) bool { return v >= 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }
	check(finite(l.RequestsPerSecond), "requests_per_second", "must be ≥ 0 (0: no limit)")
	check(finite(l.RowsPerSecond), "rows_per_second", "must be ≥ 0 (0: no limit)")
	check(l.Burst >= 0, "burst", "must be ≥ 0 (0: one second's worth)")
	check(l.Burst == 0 || l.RequestsPerSecond > 0, "burst", "set requests_per_second too: a burst needs a rate")
	check(l.RowsBurst >= 0, "rows_burst", "must be ≥ 0 (0: one second's worth)")
	check(l.RowsBurst == 0 || l.RowsPerSecond > 0, "rows_burst", "set rows_per_second too: a burst needs a rate")
	check(l.QueueMaxBytes >= 0, "queue_max_bytes", "must be ≥ 0 (0: the boot default)")
	if !tenant {
		for _, q := range []struct {
			field string
			set   bool
		}{
			{"max_concurrent_queries", l.MaxConcurrentQueries != 0}, {"max_result_rows", l.MaxResultRows != 0},
			{"max_result_bytes", l.MaxResultBytes != 0}, {"max_execution_time", l.MaxExecutionTime != 0}, {"cache_ttl", l.CacheTTL != 0},
		} {
			check(!q.set, q.field, "query limits are per tenant: set it in the tenant's limits, not a key's")
		}
		return fs
	}
	const q = "must be > 0, or -1 for no limit (0 or absent: the boot default limits.%s)"
	check(l.MaxConcurrentQueries >= NoLimit, "max_concurrent_queries", fmt.Sprintf(q, "max_concurrent_queries"))
	check(l.MaxResultRows >= NoLimit, "max_result_rows", fmt.Sprintf(q, "max_result_rows"))
	check(l.MaxResultBytes >= NoLimit, "max_result_bytes", fmt.Sprintf(q, "max_result_bytes"))
	check(l.MaxExecutionTime >= NoLimit, "max_execution_time", fmt.Sprintf(q, "max_execution_time"))
	check(l.CacheTTL >= 0, "cache_ttl", "must be > 0 (0 or absent: the boot default limits.cache_ttl)")
	return fs
}
