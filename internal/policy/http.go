package policy

import (
	"errors"
	"net/http"

	"github.com/wavehouse/wavehouse/internal/httpx"
)

// The error codes of policy refusals. They are part of the HTTP API.
const (
	CodeColumnDenied = "policy.column_denied"
	CodeMissingClaim = "policy.missing_claim"
	CodeClaimType    = "policy.invalid_claim"
	CodeInvalid      = "policy.invalid"
	// RowViolation and RowForcedColumn are the row error codes of an insert a policy refuses.
	RowViolation    = "policy_violation"
	RowForcedColumn = "forced_column"
)

// HTTPError returns the answer to a policy error, and false when err is none.
func HTTPError(err error) (httpx.Error, bool) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	switch {
	case errors.Is(err, ErrColumnDenied):
		return httpx.Error{Status: http.StatusForbidden, Code: CodeColumnDenied, Message: msg}, true
	case errors.Is(err, ErrMissingClaim):
		return httpx.Error{Status: http.StatusForbidden, Code: CodeMissingClaim, Message: msg}, true
	case errors.Is(err, ErrClaimType):
		return httpx.Error{Status: http.StatusForbidden, Code: CodeClaimType, Message: msg}, true
	case errors.Is(err, ErrInvalid):
		return httpx.Error{Status: http.StatusInternalServerError, Code: CodeInvalid, Message: msg + "; fix the role's policy in the tenant file"}, true
	}
	return httpx.Error{}, false
}
