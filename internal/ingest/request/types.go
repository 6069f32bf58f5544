package request

import (
	"encoding/json"

	"github.com/wavehouse/wavehouse/internal/ingest/payload"
)

// The default limits, used for every zero field of [Limits].
const (
	DefaultMaxBodyBytes int64 = 16 << 20
	DefaultMaxRows            = 100_000
	DefaultMaxErrors          = 100
)

// maxBodyLimit caps MaxBodyBytes so limit arithmetic cannot overflow.
const maxBodyLimit = 1 << 40

// Limits bound what one request may carry. A zero field takes its default.
type Limits struct {
	// MaxBodyBytes caps the body as sent and, separately, after decompression, so a small
	// compressed body cannot expand without bound. Default 16 MiB, at most 1 TiB.
	MaxBodyBytes int64
	// MaxRows caps the rows of one request. Default 100,000.
	MaxRows int
	// MaxErrors caps the row errors reported; the counts stay exact. Default 100.
	MaxErrors int
}

// withDefaults returns l with every zero or negative field set to its default.
func (l Limits) withDefaults() Limits {
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.MaxBodyBytes > maxBodyLimit {
		l.MaxBodyBytes = maxBodyLimit
	}
	if l.MaxRows <= 0 {
		l.MaxRows = DefaultMaxRows
	}
	if l.MaxErrors <= 0 {
		l.MaxErrors = DefaultMaxErrors
	}
	return l
}

// Options change how invalid rows are handled.
type Options struct {
	// Partial accepts the valid rows of a request and reports the invalid ones, instead of
	// refusing the whole request.
	Partial bool
	// Policy, when not nil, is an end user's insert policy: each row takes the forced values,
	// a row giving another value there is refused (row code forced_column), and a row the
	// policy does not match is refused (row code policy_violation).
	Policy InsertPolicy
	// Columns, when not nil, is the column list of a ClickHouse INSERT: the columns the body
	// gives. A body without a header (CSV, TSV, JSON compact rows) gives them in this order
	// instead of every insertable column in table order; a JSON object key or header name
	// outside the list is refused (unknown_column); the columns left out take their defaults
	// as if omitted. Every name must be an insertable column of the table, once, else the
	// request is refused (400 ingest.invalid_columns).
	Columns []string
}

// InsertPolicy is what an end user's role forces and checks on the rows it inserts (a
// *policy.Bound).
type InsertPolicy interface {
	// Forced returns the canonical value every row takes in column col.
	Forced(col string) (json.RawMessage, bool)
	// Match reports whether a row passes the role's filter; get returns a column's canonical
	// value, false when the row leaves it to the server's default.
	Match(get func(col string) (json.RawMessage, bool)) bool
}

// Result is what a successful Parse returns.
type Result struct {
	// Segments hold the accepted rows as RowBinary (binary payload segments); normally there is
	// one segment. Empty when every row was rejected.
	Segments []payload.Segment
	// Payload is Segments encoded as one queue payload (payload.Encode's bytes). It shares
	// memory with Segments: the rows are written once, with room for the header before them.
	Payload []byte
	// Accepted, Rejected and Total count rows; Accepted+Rejected == Total.
	Accepted, Rejected, Total int
	// Errors are the first MaxErrors row errors of the rejected rows, in body order.
	Errors []RowError
	// ErrorCount is the exact number of row errors found (a rejected row may have several).
	ErrorCount int
	// ErrorsByCode counts every row error by code, exactly (for metrics); nil when none.
	ErrorsByCode map[string]int
	// Bytes is the size of the body after decompression.
	Bytes int
}

// RowError is one problem with one row.
type RowError struct {
	// Row is the 0-based index of the row in the body; a CSV or TSV header is not a row.
	Row int `json:"row"`
	// Line is the 1-based line of a CSV or TSV body where the row starts (the header counts);
	// zero, and omitted, for JSON.
	Line int `json:"line,omitempty"`
	// Column names the column at fault, when there is one.
	Column string `json:"column,omitempty"`
	// Code is a stable machine-readable reason.
	Code string `json:"code"`
	// Message is for humans; it names the column and an excerpt of the offending value.
	Message string `json:"message"`
}

// InvalidRows is the Details of an ingest.invalid_rows error.
type InvalidRows struct {
	// Total and Rejected count rows; ErrorCount counts row errors exactly.
	Total      int `json:"total"`
	Rejected   int `json:"rejected"`
	ErrorCount int `json:"error_count"`
	// ErrorsByCode counts every row error by code, exactly.
	ErrorsByCode map[string]int `json:"errors_by_code"`
	// Errors are the first MaxErrors row errors.
	Errors []RowError `json:"errors"`
}
