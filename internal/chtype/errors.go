package chtype

import "fmt"

// Code is a stable machine-readable reason a value was refused.
type Code string

// The value error codes. They are part of the HTTP API (row errors) and never change meaning.
const (
	CodeTypeMismatch    Code = "type_mismatch"
	CodeOutOfRange      Code = "out_of_range"
	CodeInvalidValue    Code = "invalid_value"
	CodeTooLong         Code = "too_long"
	CodeNullNotAllowed  Code = "null_not_allowed"
	CodeUnsupportedType Code = "unsupported_type"
)

// Error is a per-value validation or conversion failure.
type Error struct {
	// Code is the stable reason.
	Code Code
	// Path locates the offending element inside a composite value ("[2]", ".k", "[0].x"); empty
	// for the value itself.
	Path string
	// Message is a human explanation that never contains more than a short excerpt of the value.
	Message string
}

// Error formats the error as "code: path: message".
func (e *Error) Error() string {
	if e.Path != "" {
		return string(e.Code) + ": " + e.Path + ": " + e.Message
	}
	return string(e.Code) + ": " + e.Message
}

func errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// within prefixes the path of err (an *Error) with the element step.
func within(err error, step string) error {
	if e, ok := err.(*Error); ok {
		return &Error{Code: e.Code, Path: step + e.Path, Message: e.Message}
	}
	return err
}

// excerpt returns at most 32 bytes of raw for messages.
func excerpt(raw []byte) string {
	if len(raw) > 32 {
		return string(raw[:32]) + "…"
	}
	return string(raw)
}

func mismatch(t *Type, raw []byte) *Error {
	return errorf(CodeTypeMismatch, "expected %s, got %s", t.Name, jsonKindName(raw))
}
