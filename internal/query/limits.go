package query

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/store"
)

// LimitError is a query stopped by one of its limits. It wraps the store's error, so
// errors.Is(err, store.ErrLimitExceeded) holds.
type LimitError struct {
	// Limit names the limit: max_result_rows, max_result_bytes or max_execution_time (the
	// tenant's), or max_rows (the request's own, lower than the tenant's).
	Limit string
	// Value is the limit in force: rows, bytes or seconds.
	Value any
	// Err is the store's error.
	Err error
}

// Error names the limit, its value and the engine's message.
func (e *LimitError) Error() string {
	return fmt.Sprintf("query: over the limit %s = %v: %v", e.Limit, e.Value, e.Err)
}

// Unwrap returns the store's error.
func (e *LimitError) Unwrap() error { return e.Err }

// bounds are the limits one request runs under.
type bounds struct {
	store store.Limits
	// rowsLimit names the row limit: the tenant's max_result_rows or the request's max_rows.
	rowsLimit string
	ttl       time.Duration
}

// newBounds combines the tenant's limits with the request's own.
func newBounds(lim Limits, req Request) bounds {
	b := bounds{rowsLimit: "max_result_rows", ttl: lim.CacheTTL, store: store.Limits{
		ReadOnly: true, MaxExecutionTime: lim.MaxExecutionTime, MaxResultRows: lim.MaxRows, MaxResultBytes: lim.MaxBytes,
	}}
	if req.MaxRows > 0 && (lim.MaxRows == 0 || req.MaxRows < lim.MaxRows) {
		b.store.MaxResultRows, b.rowsLimit = req.MaxRows, "max_rows"
	}
	if d := req.MaxExecutionTime; d > 0 && (lim.MaxExecutionTime == 0 || d < lim.MaxExecutionTime) {
		b.store.MaxExecutionTime = d
	}
	if req.TTL > 0 {
		b.ttl = req.TTL
	}
	return b
}

// fold returns the digest of the query under these result limits: a result cached under a
// higher limit is never served once the tenant's limit is lowered (the time limit does not
// change a finished result, so it is not folded).
func (b bounds) fold(d cache.QueryDigest) cache.QueryDigest {
	var buf [sha256.Size + 16]byte
	copy(buf[:], d[:])
	binary.BigEndian.PutUint64(buf[sha256.Size:], b.store.MaxResultRows)
	binary.BigEndian.PutUint64(buf[sha256.Size+8:], b.store.MaxResultBytes)
	return sha256.Sum256(buf[:])
}

// overRows is the error of a result with more rows than the row limit, found by the gateway.
func (b bounds) overRows() error {
	return &LimitError{Limit: b.rowsLimit, Value: b.store.MaxResultRows,
		Err: fmt.Errorf("%w: the result has more than %d rows", store.ErrLimitExceeded, b.store.MaxResultRows)}
}

// named wraps a store limit error in a *LimitError naming the limit WaveHouse set that the
// engine reports; other errors, and limits the server imposed itself, are returned as they are.
func (b bounds) named(err error) error {
	var ex *store.Exception
	if !errors.Is(err, store.ErrLimitExceeded) || !errors.As(err, &ex) {
		return err
	}
	msg := strings.ToLower(ex.Message)
	switch {
	case ex.Code == 159 && b.store.MaxExecutionTime > 0:
		return &LimitError{Limit: "max_execution_time", Value: b.store.MaxExecutionTime.Seconds(), Err: err}
	case !strings.Contains(msg, "limit for result"):
	case strings.Contains(msg, "max rows") && b.store.MaxResultRows > 0:
		return &LimitError{Limit: b.rowsLimit, Value: b.store.MaxResultRows, Err: err}
	case strings.Contains(msg, "max bytes") && b.store.MaxResultBytes > 0:
		return &LimitError{Limit: "max_result_bytes", Value: b.store.MaxResultBytes, Err: err}
	}
	return err
}
