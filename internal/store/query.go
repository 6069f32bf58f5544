package store

import (
	"encoding/json"
	"time"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// Query is one SQL statement with its parameters and limits.
type Query struct {
	// SQL is the statement text. {name:Type} placeholders are bound from Params. It must not
	// carry its own FORMAT clause; results are always delivered as canonical rows.
	SQL string
	// Params are the values for the placeholders.
	Params []Param
	// Limits bound the query on the server.
	Limits Limits
	// QueryID is passed to the server when non-empty (for tracing and KILL QUERY).
	QueryID string
}

// Param is a value for a {Name:Type} placeholder. Value is raw JSON, validated against the
// placeholder's type exactly like ingested data (see chtype).
type Param struct {
	Name  string
	Value json.RawMessage
}

// Limits are per-query server settings; zero values mean "no limit from WaveHouse".
type Limits struct {
	// ReadOnly sets readonly=1: the server refuses writes, DDL and setting changes.
	ReadOnly bool
	// MaxExecutionTime is max_execution_time (rounded up to whole seconds on old servers).
	MaxExecutionTime time.Duration
	// MaxResultRows is max_result_rows (with result_overflow_mode=throw).
	MaxResultRows uint64
	// MaxResultBytes is max_result_bytes.
	MaxResultBytes uint64
	// MaxMemoryUsage is max_memory_usage in bytes.
	MaxMemoryUsage uint64
}

// ResultColumn describes one column of a query result.
type ResultColumn struct {
	Name     string
	TypeName string
	Type     *chtype.Type
}

// Stats are a query's counters; complete once Next has returned false.
type Stats struct {
	// Rows is the number of rows returned.
	Rows uint64
	// RowsRead and BytesRead are what the engine read to answer (0 when it does not say).
	RowsRead  uint64
	BytesRead uint64
	// Elapsed is the wall time from start to the last row.
	Elapsed time.Duration
}

// Rows is a streamed query result. It is not safe for concurrent use.
type Rows interface {
	// Columns describes the result columns; available before the first Next.
	Columns() []ResultColumn
	// Next advances to the next row; it returns false at the end or on error (see Err).
	Next() bool
	// Row returns the current row as a canonical JSON array, valid until the next Next.
	Row() []byte
	// Err returns the error that stopped iteration, translated to the store sentinels.
	Err() error
	// Stats returns the query's counters.
	Stats() Stats
	// Close stops the query if still running and releases its resources; idempotent.
	Close() error
}
