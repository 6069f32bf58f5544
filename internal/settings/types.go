package settings

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"gopkg.in/yaml.v3"
)

// Scope is a permission an API key grants.
type Scope string

// The scopes an API key may hold.
const (
	// ScopeIngest allows POST /v1/ingest/{table}.
	ScopeIngest Scope = "ingest"
	// ScopeQuery allows queries, pipes and reading table metadata.
	ScopeQuery Scope = "query"
	// ScopeStream allows live streams.
	ScopeStream Scope = "stream"
	// ScopeAdmin allows the tenant's /v1/ops/* routes (DLQ, operator SQL).
	ScopeAdmin Scope = "admin"
)

// Scopes lists every valid scope in canonical order.
func Scopes() []Scope { return []Scope{ScopeIngest, ScopeQuery, ScopeStream, ScopeAdmin} }

// Valid reports whether s is one of Scopes.
func (s Scope) Valid() bool { return slices.Contains(Scopes(), s) }

// Snapshot is one validated, immutable view of the settings directory.
type Snapshot struct {
	// Dir is the settings directory it was loaded from ("" for an empty snapshot).
	Dir string
	// Fingerprint is a hash of the directory's contents it was loaded from.
	Fingerprint string
	// LoadedAt is when it was loaded.
	LoadedAt time.Time

	tenants map[string]*Tenant
	keys    map[string]keyRef
	issuers map[string]*Tenant
	shared  []PipeFile
}

// SharedPipes returns the pipe files of settings_dir/pipes, which every tenant has (a tenant's
// own pipe of the same name replaces it).
func (s *Snapshot) SharedPipes() []PipeFile { return s.shared }

type keyRef struct {
	tenant *Tenant
	key    *Key
}

// Empty returns a snapshot with no tenants and no keys, used when no settings directory is set.
func Empty() *Snapshot {
	return &Snapshot{tenants: map[string]*Tenant{}, keys: map[string]keyRef{}, issuers: map[string]*Tenant{}}
}

// Tenant returns the tenant called name.
func (s *Snapshot) Tenant(name string) (*Tenant, bool) {
	t, ok := s.tenants[name]
	return t, ok
}

// KeyByID returns the key with this id and the tenant that owns it.
func (s *Snapshot) KeyByID(id string) (*Key, *Tenant, bool) {
	r, ok := s.keys[id]
	if !ok {
		return nil, nil, false
	}
	return r.key, r.tenant, true
}

// TenantNames returns the tenants' names, sorted.
func (s *Snapshot) TenantNames() []string {
	names := make([]string, 0, len(s.tenants))
	for n := range s.tenants {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// KeyCount returns the number of API keys across all tenants.
func (s *Snapshot) KeyCount() int { return len(s.keys) }

// Tenant is one tenant's settings.
type Tenant struct {
	// Name is the tenant's name, taken from its file or folder name.
	Name string
	// File is the tenant file, relative to the settings directory.
	File string
	// Database is the tenant's ClickHouse database.
	Database string
	// ClickHouse, when non-nil, overrides the store's default server for this tenant.
	ClickHouse *Target
	// Keys are the tenant's API keys.
	Keys []Key
	// Limits are the tenant's rate and concurrency limits.
	Limits Limits
	// Dedupe configures the tenant's idempotency records.
	Dedupe Dedupe
	// JWT, when non-nil, lets the tenant's end users authenticate with JSON Web Tokens.
	JWT *JWT
	// CORS, when non-nil, lets browsers on its origins call the API with the tenant's credentials.
	CORS *CORS
	// Pipes are the tenant's pipe files (filled in by the pipes work; loaded, not yet parsed).
	Pipes []PipeFile
}

// Target is a tenant's own ClickHouse server.
type Target struct {
	// Addrs are native-protocol host:port addresses.
	Addrs []string `yaml:"addrs"`
	// User is the ClickHouse user.
	User string `yaml:"user"`
	// PasswordFile is the path of a file holding the password; the password itself never appears
	// in settings.
	PasswordFile string `yaml:"password_file"`
}

// Key is one API key; only the hash of its secret is stored.
type Key struct {
	// ID is the public key id (the <keyid> of wh_<keyid>_<secret>).
	ID string
	// Hash is the lowercase hex SHA-256 of the secret.
	Hash string
	// Scopes are the permissions the key grants.
	Scopes []Scope
	// Tables, when non-empty, are the only tables the key may touch.
	Tables []string
	// Expires is when the key stops working; zero means never.
	Expires time.Time
	// Limits, when non-nil, are extra per-key limits applied on top of the tenant's.
	Limits *Limits
}

// HasScope reports whether k grants s.
func (k *Key) HasScope(s Scope) bool { return slices.Contains(k.Scopes, s) }

// Expired reports whether k has expired at now.
func (k *Key) Expired(now time.Time) bool { return !k.Expires.IsZero() && !now.Before(k.Expires) }

// Limits are rate, concurrency and query limits. A zero rate field means no limit; a zero query
// field (max_concurrent_queries, max_result_rows, max_result_bytes, max_execution_time,
// cache_ttl) means the boot default, and -1 means no limit (see WithDefaults).
type Limits struct {
	// RequestsPerSecond is the sustained request rate.
	RequestsPerSecond float64 `yaml:"requests_per_second"`
	// RowsPerSecond is the sustained ingested row rate.
	RowsPerSecond float64 `yaml:"rows_per_second"`
	// Burst is how many requests may arrive at once; default max(1, ceil(requests_per_second)).
	Burst int `yaml:"burst"`
	// RowsBurst is how many rows may arrive at once; default max(1, ceil(rows_per_second)). A
	// request with more rows than this is always refused, so keep it ≥ ingest.max_rows.
	RowsBurst int `yaml:"rows_burst"`
	// MaxConcurrentQueries bounds the tenant's queries (and pipe calls) running at once.
	MaxConcurrentQueries int `yaml:"max_concurrent_queries"`
	// MaxResultRows is the most rows one query may return (ClickHouse max_result_rows).
	MaxResultRows int64 `yaml:"max_result_rows"`
	// MaxResultBytes is the most uncompressed bytes one query may return (max_result_bytes).
	MaxResultBytes int64 `yaml:"max_result_bytes"`
	// MaxExecutionTime bounds how long one query runs (max_execution_time).
	MaxExecutionTime Duration `yaml:"max_execution_time"`
	// CacheTTL is how long the tenant's query results stay cached (a pipe's @ttl wins).
	CacheTTL Duration `yaml:"cache_ttl"`
	// QueueMaxBytes is the tenant's budget of unconsumed queue bytes (0: the boot default).
	QueueMaxBytes int64 `yaml:"queue_max_bytes"`
}

// NoLimit is the value of a query limit that lifts the boot default.
const NoLimit = -1

// WithDefaults returns l with its query limits resolved against the boot defaults d: a zero
// field takes d's value, and NoLimit (in l or in d) becomes zero, "no limit". The rate fields and
// QueueMaxBytes are returned as they are.
func (l Limits) WithDefaults(d Limits) Limits {
	l.MaxConcurrentQueries = resolve(l.MaxConcurrentQueries, d.MaxConcurrentQueries)
	l.MaxResultRows = resolve(l.MaxResultRows, d.MaxResultRows)
	l.MaxResultBytes = resolve(l.MaxResultBytes, d.MaxResultBytes)
	l.MaxExecutionTime = resolve(l.MaxExecutionTime, d.MaxExecutionTime)
	l.CacheTTL = resolve(l.CacheTTL, d.CacheTTL)
	return l
}

func resolve[T int | int64 | Duration](v, d T) T {
	if v == 0 {
		v = d
	}
	return max(v, 0)
}

// Duration is a settings duration: a Go duration ("30s", "1m30s") or a number of days ("7d").
// In limits, -1 means no limit.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML reads a Go duration, a number of days or -1.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as 30s, 5m or 7d", n.Line)
	}
	if n.Value == "-1" {
		*d = NoLimit
		return nil
	}
	v, err := parseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w: want a duration such as 30s, 5m or 7d, or -1 for no limit", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// Dedupe configures a tenant's idempotency records.
type Dedupe struct {
	// Retention is how long an Idempotency-Key is remembered; zero means the boot default.
	Retention time.Duration
}

// PipeFile is one pipe definition file of a tenant. The pipes work parses SQL into a pipe.
type PipeFile struct {
	// Name is the pipe's name (the file name without .sql).
	Name string
	// File is the path relative to the settings directory.
	File string
	// SQL is the file's contents.
	SQL string
}
