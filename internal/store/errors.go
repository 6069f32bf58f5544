package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors; see the package documentation for their meaning.
var (
	ErrUnavailable     = errors.New("store: unavailable")
	ErrTimeout         = errors.New("store: timeout")
	ErrOverloaded      = errors.New("store: overloaded")
	ErrUnknownDatabase = errors.New("store: unknown database")
	ErrUnknownTable    = errors.New("store: unknown table")
	ErrUnknownColumn   = errors.New("store: unknown column")
	ErrRejected        = errors.New("store: rejected")
	ErrReadOnly        = errors.New("store: read-only")
	ErrLimitExceeded   = errors.New("store: limit exceeded")
	ErrClosed          = errors.New("store: closed")
)

// Exception is an error reported by the ClickHouse engine, kept as the cause of a sentinel.
type Exception struct {
	// Code is the ClickHouse error code (60 = UNKNOWN_TABLE …).
	Code int32
	// Message is the engine's text.
	Message string
}

// Error formats the exception like ClickHouse does.
func (e *Exception) Error() string {
	return "code " + strconv.Itoa(int(e.Code)) + ": " + e.Message
}

// RowError names the row (index in the batch) and column an insert failed on.
type RowError struct {
	Row    int
	Column string
	Err    error
}

// Error formats the row error.
func (e *RowError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("row %d: %v", e.Row, e.Err)
	}
	return fmt.Sprintf("row %d, column %s: %v", e.Row, e.Column, e.Err)
}

// Unwrap returns the underlying error.
func (e *RowError) Unwrap() error { return e.Err }

// Op says which kind of call an engine error came from, because a code can mean a transient
// overload for an insert and a caller-imposed limit for a query.
type Op int

// The operations.
const (
	OpQuery Op = iota
	OpInsert
	OpSchema
)

// SentinelForCode maps a ClickHouse error code to the sentinel it means for op.
func SentinelForCode(code int32, op Op) error {
	switch code {
	case 60:
		return ErrUnknownTable
	case 81:
		return ErrUnknownDatabase
	case 16:
		return ErrUnknownColumn
	case 164:
		return ErrReadOnly
	case 159:
		if op == OpQuery {
			return ErrLimitExceeded
		}
		return ErrTimeout
	case 209:
		return ErrTimeout
	case 210, 279, 203:
		return ErrUnavailable
	case 192, 193, 194, 195, 516:
		// Unknown user, wrong or missing password, address not allowed, authentication failed:
		// the gateway's credentials are wrong, not the request. Retrying after the operator fixes
		// them succeeds, so rows wait in the queue instead of going to the dead-letter queue.
		return ErrUnavailable
	case 252, 202, 242, 319, 425, 999, 160, 236:
		return ErrOverloaded
	case 241, 173:
		if op == OpInsert {
			return ErrOverloaded
		}
		return ErrLimitExceeded
	case 158, 396, 307, 157:
		return ErrLimitExceeded
	}
	return ErrRejected
}

// FromException wraps an engine exception in its sentinel: "sentinel: code N: message".
func FromException(code int32, message string, op Op) error {
	return fmt.Errorf("%w: %w", SentinelForCode(code, op), &Exception{Code: code, Message: message})
}

// Class is the retry class of an error.
type Class int

// The classes.
const (
	// ClassNone is a nil error.
	ClassNone Class = iota
	// ClassTransient: retry later with backoff (server down, timeout, overload).
	ClassTransient
	// ClassPermanent: retrying the same input fails the same way (bad data, unknown table).
	ClassPermanent
	// ClassCanceled: the caller gave up (context canceled) or the store is closing.
	ClassCanceled
)

// String names the class (for metrics labels).
func (c Class) String() string {
	return [...]string{"none", "transient", "permanent", "canceled"}[c]
}

// Classify tells what kind of failure err is. Errors it does not recognise are transient:
// an unknown failure must never send data to the dead-letter queue.
func Classify(err error) Class {
	switch {
	case err == nil:
		return ClassNone
	case errors.Is(err, context.Canceled), errors.Is(err, ErrClosed):
		return ClassCanceled
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrTimeout), errors.Is(err, ErrOverloaded),
		errors.Is(err, context.DeadlineExceeded):
		return ClassTransient
	case errors.Is(err, ErrRejected), errors.Is(err, ErrUnknownTable), errors.Is(err, ErrUnknownDatabase),
		errors.Is(err, ErrUnknownColumn), errors.Is(err, ErrReadOnly), errors.Is(err, ErrLimitExceeded):
		return ClassPermanent
	}
	return ClassTransient
}

// IsTransient reports whether err is worth retrying later.
func IsTransient(err error) bool { return Classify(err) == ClassTransient }

// SchemaChanged reports whether err means a cached schema of the table is stale.
func SchemaChanged(err error) bool {
	return errors.Is(err, ErrUnknownTable) || errors.Is(err, ErrUnknownDatabase) || errors.Is(err, ErrUnknownColumn) ||
		exceptionCode(err) == 53 || exceptionCode(err) == 10
}

func exceptionCode(err error) int32 {
	var e *Exception
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}
