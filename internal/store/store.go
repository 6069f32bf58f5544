package store

import (
	"context"
	"regexp"
	"strconv"
	"strings"
)

// Target names where a call goes: a tenant and the ClickHouse database it owns.
type Target struct {
	// Tenant selects the connection pool (a tenant may have its own server); empty means the
	// default target of the backend's configuration.
	Tenant string
	// Database is the ClickHouse database; it must be non-empty.
	Database string
}

// SchemaReader reads table schemas.
type SchemaReader interface {
	// Columns returns the columns of target.Database.table in table order. A missing table is
	// ErrUnknownTable, a missing database ErrUnknownDatabase.
	Columns(ctx context.Context, target Target, table string) ([]Column, error)
}

// Inserter writes batches of validated rows.
type Inserter interface {
	// Insert writes all rows of b in one insert statement, or none of them.
	Insert(ctx context.Context, b Batch) error
}

// Querier runs read queries.
type Querier interface {
	// Query starts q and returns its streamed result. The caller must Close the Rows.
	Query(ctx context.Context, target Target, q Query) (Rows, error)
}

// Execer runs statements that return no rows (DDL, ALTER, operator SQL).
type Execer interface {
	// Exec runs sql in target.Database's context (unqualified names resolve there).
	Exec(ctx context.Context, target Target, sql string) error
}

// Pinger checks reachability.
type Pinger interface {
	// Ping returns nil when target's server (or the embedded engine) answers.
	Ping(ctx context.Context, target Target) error
}

// Store is the full handle a backend provides; functions should accept the narrowest role.
type Store interface {
	SchemaReader
	Inserter
	Querier
	Execer
	Pinger
	// Close releases connections (or the engine). It is idempotent; later calls of any method
	// return ErrClosed.
	Close(ctx context.Context) error
}

// Capabilities says what the engine behind a store supports beyond the 18.16 baseline.
type Capabilities struct {
	// ModernTypes: DateTime64, Date32, Bool, Map, JSON, IPv4/IPv6, Int128/256.
	ModernTypes bool
	// NativeParameters: the server binds {name:Type} itself.
	NativeParameters bool
	// InsertDedupToken: Batch.DedupToken is honoured (insert_deduplication_token, ClickHouse
	// 22.2 and later). Whether a given table deduplicates is a property of the table, see
	// DedupReporter.
	InsertDedupToken bool
}

// DedupReporter is implemented by stores that can tell whether inserts into a table are
// deduplicated by token: the engine honours Batch.DedupToken and the table keeps a
// deduplication log (a Replicated* engine, or a MergeTree created with
// SETTINGS non_replicated_deduplication_window > 0).
type DedupReporter interface {
	InsertDeduplicated(ctx context.Context, target Target, table string) (bool, error)
}

// CapabilityReporter is implemented by stores that can tell what their engine supports. For a
// server backend the answer comes from the version detected at connect.
type CapabilityReporter interface {
	Capabilities(ctx context.Context, target Target) (Capabilities, error)
}

var dedupWindowSetting = regexp.MustCompile(`\b(non_replicated_deduplication_window|replicated_deduplication_window)\s*=\s*(\d+)`)

// TableDeduplicates reports, from a table's system.tables engine and create_table_query,
// whether the table keeps an insert deduplication log: a Replicated* MergeTree unless its
// replicated_deduplication_window is 0, or a plain *MergeTree whose
// non_replicated_deduplication_window is above 0 (the default 0 disables it).
func TableDeduplicates(engine, createQuery string) bool {
	settings := map[string]uint64{}
	if i := strings.LastIndex(createQuery, " SETTINGS "); i >= 0 {
		for _, m := range dedupWindowSetting.FindAllStringSubmatch(createQuery[i:], -1) {
			n, _ := strconv.ParseUint(m[2], 10, 64)
			settings[m[1]] = n
		}
	}
	switch {
	case strings.HasPrefix(engine, "Replicated") && strings.HasSuffix(engine, "MergeTree"):
		n, set := settings["replicated_deduplication_window"]
		return !set || n > 0
	case strings.HasSuffix(engine, "MergeTree"):
		return settings["non_replicated_deduplication_window"] > 0
	}
	return false
}
