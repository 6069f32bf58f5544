package chformat

import (
	"errors"
	"fmt"
)

// Decoded is rows converted to canonical JSON arrays (chtype's canonical form), one per line.
type Decoded struct {
	// Names and Types are the columns of every row, in row order: the caller's for RowBinary,
	// the header's for RowBinaryWithNamesAndTypes and the first block's for Native.
	Names, Types []string
	// Rows is the number of rows in JSON.
	Rows int
	// JSON holds Rows canonical JSON arrays, each followed by '\n', appended to the dst the
	// decoder was given.
	JSON []byte
}

// The decoding errors. Every error the decoders return wraps exactly one of them; every
// ErrMalformed and ErrInvalidValue is inside a *RowError.
var (
	// ErrMalformed reports data that ends inside a value or is not a value of its column's
	// type (a Nullable flag other than 0/1, decreasing array offsets, a LowCardinality index
	// outside its dictionary, a type string that does not parse…).
	ErrMalformed = errors.New("chformat: truncated or malformed data")
	// ErrInvalidValue reports a well-formed value its column's type does not admit: an enum
	// value the type does not name. The error also wraps the *chtype.Error (CodeInvalidValue)
	// that names the value and the type.
	ErrInvalidValue = errors.New("chformat: invalid value")
	// ErrUnsupportedType reports a column type the decoder cannot read.
	ErrUnsupportedType = errors.New("chformat: unsupported type")
	// ErrHeaderMismatch reports a RowBinaryWithNamesAndTypes header that names a column the
	// caller did not expect, or gives an expected column another type.
	ErrHeaderMismatch = errors.New("chformat: header does not match the table")
	// ErrTooLarge reports LowCardinality data whose dictionary indexes expand to far more
	// canonical JSON than the input holds (a decompression bomb).
	ErrTooLarge = errors.New("chformat: decoded rows too large")
)

// RowError is bad data located in a row and column. Row is the 0-based index of the row in the
// whole input (all Native blocks counted), the first row of its block for a Native block's
// header, 0 for a RowBinaryWithNamesAndTypes header; Column is the column's name, empty when
// the data ends before one is known. Err wraps one of the package's sentinel errors.
type RowError struct {
	Row    int
	Column string
	Err    error
}

// Error names the row (0-based index) and the column.
func (e *RowError) Error() string {
	return fmt.Sprintf("row index %d, column %q: %v", e.Row, e.Column, e.Err)
}

// Unwrap returns Err.
func (e *RowError) Unwrap() error { return e.Err }
