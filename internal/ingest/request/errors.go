package request

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/wavehouse/wavehouse/internal/httpx"
)

// The request-level error codes (httpx.Error.Code). They are part of the HTTP API.
const (
	CodeUnsupportedMediaType = "ingest.unsupported_media_type"
	CodeUnsupportedEncoding  = "ingest.unsupported_encoding"
	CodeCorruptBody          = "ingest.corrupt_body"
	CodeBodyReadFailed       = "ingest.body_read_failed"
	CodeBodyTooLarge         = "ingest.body_too_large"
	CodeTooManyRows          = "ingest.too_many_rows"
	CodeEmptyBody            = "ingest.empty_body"
	CodeMalformedJSON        = "ingest.malformed_json"
	CodeMalformedCSV         = "ingest.malformed_csv"
	CodeMalformedTSV         = "ingest.malformed_tsv"
	CodeInvalidRows          = "ingest.invalid_rows"
	CodeInvalidColumns       = "ingest.invalid_columns"
	CodeTypesMismatch        = "ingest.types_mismatch"
	CodeMalformedHeader      = "ingest.malformed_header"
)

// The row error codes this package adds to chtype's value codes. They are part of the HTTP API.
const (
	RowUnknownColumn   = "unknown_column"
	RowNotWritable     = "not_writable"
	RowMissingColumn   = "missing_column"
	RowDuplicateColumn = "duplicate_column"
	RowNotAnObject     = "not_an_object"
	RowEmpty           = "empty_row"
	// RowFieldCount is a CSV or TSV record whose field count differs from the header's (or,
	// without a header, from the table's insertable columns).
	RowFieldCount = "field_count"
	// RowNotAnArray is a JSONCompactEachRow row that is not a JSON array.
	RowNotAnArray = "not_an_array"
)

// acceptedMediaTypes is never modified; AcceptedMediaTypes hands out copies.
var acceptedMediaTypes = []string{
	"application/json", "application/x-ndjson", "application/ndjson", "application/jsonl",
	"application/jsonlines", "application/x-jsonlines", "text/csv", "text/tab-separated-values",
}

// AcceptedMediaTypes returns the Content-Types Parse accepts.
func AcceptedMediaTypes() []string { return append([]string(nil), acceptedMediaTypes...) }

// AcceptedEncodings returns the Content-Encodings Parse accepts.
func AcceptedEncodings() []string {
	return []string{"identity", "gzip", "zstd", "lz4", "deflate", "br"}
}

func fail(status int, code, format string, args ...any) *httpx.Error {
	return &httpx.Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func unsupportedMediaType(ct string) *httpx.Error {
	e := fail(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
		"content type %q is not supported; send one of %s", excerpt(ct, 64), strings.Join(acceptedMediaTypes, ", "))
	e.Details = map[string][]string{"accepted": AcceptedMediaTypes()}
	return e
}

// badMediaParam refuses a CSV or TSV Content-Type whose parameters cannot be honoured.
func badMediaParam(ct, why string) *httpx.Error {
	e := fail(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "content type %q: %s", excerpt(ct, 64), why)
	e.Details = map[string][]string{"accepted": AcceptedMediaTypes()}
	return e
}

func unsupportedEncoding(ce string) *httpx.Error {
	e := fail(http.StatusUnsupportedMediaType, CodeUnsupportedEncoding,
		"content encoding %q is not supported; send one of %s", excerpt(ce, 64), strings.Join(AcceptedEncodings(), ", "))
	e.Details = map[string][]string{"accepted": AcceptedEncodings()}
	return e
}

func bodyTooLarge(limit int64, decompressed bool) *httpx.Error {
	what := "body"
	if decompressed {
		what = "decompressed body"
	}
	return fail(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "%s is larger than the limit of %d bytes", what, limit)
}

func tooManyRows(limit int) *httpx.Error {
	return fail(http.StatusRequestEntityTooLarge, CodeTooManyRows, "more than %d rows in one request; split it", limit)
}

func emptyBody() *httpx.Error {
	return fail(http.StatusBadRequest, CodeEmptyBody, "the body holds no rows")
}

func corruptBody(enc string, err error) *httpx.Error {
	return fail(http.StatusBadRequest, CodeCorruptBody, "cannot decode the %s body: %v", enc, err)
}

func readFailed(err error) *httpx.Error {
	return fail(http.StatusBadRequest, CodeBodyReadFailed, "cannot read the body: %v", err)
}

// malformed reports a JSON syntax error at byte offset off (of the decompressed body) in row.
func malformed(row, off int, msg string) *httpx.Error {
	e := fail(http.StatusBadRequest, CodeMalformedJSON, "malformed JSON in row %d at byte offset %d: %s", row, off, msg)
	e.Details = map[string]int{"row": row, "offset": off}
	return e
}

// malformedText reports a CSV or TSV syntax error: the data row (0-based), the body line
// (1-based) where it starts, and the byte offset of the fault in the decompressed body.
func malformedText(f format, row, line, off int, msg string) *httpx.Error {
	code, name := CodeMalformedCSV, "CSV"
	if f == formatTSV {
		code, name = CodeMalformedTSV, "TSV"
	}
	e := fail(http.StatusBadRequest, code, "malformed %s in row %d (line %d) at byte offset %d: %s", name, row, line, off, msg)
	e.Details = map[string]int{"row": row, "line": line, "offset": off}
	return e
}

// invalidColumns refuses an INSERT column list (Options.Columns), naming every problem.
func invalidColumns(problems []string) *httpx.Error {
	e := fail(http.StatusBadRequest, CodeInvalidColumns, "the column list cannot be used: %s", strings.Join(problems, "; "))
	e.Details = map[string][]string{"problems": problems}
	return e
}

// malformedHeader refuses a names or types record that cannot be read.
func malformedHeader(msg string) *httpx.Error {
	return fail(http.StatusBadRequest, CodeMalformedHeader, "%s", msg)
}

// typesMismatch refuses a …WithNamesAndTypes body whose types record disagrees with the table.
func typesMismatch(problems []string) *httpx.Error {
	e := fail(http.StatusBadRequest, CodeTypesMismatch, "the types in the body differ from the table's: %s", strings.Join(problems, "; "))
	e.Details = map[string][]string{"problems": problems}
	return e
}

func invalidRows(res *Result) *httpx.Error {
	msg := fmt.Sprintf("%d of %d rows are invalid; nothing was accepted (send ?partial=true to accept the valid rows)", res.Rejected, res.Total)
	if len(res.Errors) > 0 {
		first := res.Errors[0]
		if first.Line > 0 {
			msg += fmt.Sprintf("; first: row %d (line %d): %s", first.Row, first.Line, first.Message)
		} else {
			msg += fmt.Sprintf("; first: row %d: %s", first.Row, first.Message)
		}
	}
	errs := res.Errors
	if errs == nil {
		errs = []RowError{}
	}
	return &httpx.Error{
		Status:  http.StatusBadRequest,
		Code:    CodeInvalidRows,
		Message: msg,
		Details: InvalidRows{Total: res.Total, Rejected: res.Rejected, ErrorCount: res.ErrorCount, ErrorsByCode: res.ErrorsByCode, Errors: errs},
	}
}

// excerptBytes is excerpt for a byte slice, copying no more than it keeps.
func excerptBytes(b []byte, n int) string {
	if len(b) > n+4 {
		b = b[:n+4]
	}
	return excerpt(string(b), n)
}

// Excerpt returns at most n bytes of s, cut on a UTF-8 boundary and marked ("…") when cut: for
// messages that quote what a client sent.
func Excerpt(s string, n int) string { return excerpt(s, n) }

// excerpt returns at most n bytes of s, cut on a UTF-8 boundary, marked when cut.
func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
