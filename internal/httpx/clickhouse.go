package httpx

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Exception is a ClickHouse server error code: its number and its name, the two things ClickHouse
// clients read from an error body ("Code: 60. DB::Exception: … (UNKNOWN_TABLE)").
type Exception struct {
	Code int
	Name string
}

// The ClickHouse error codes the gateway's ClickHouse HTTP interface answers with (numbers from
// ClickHouse's src/Common/ErrorCodes.cpp).
var (
	ExcUnsupportedMethod        = Exception{1, "UNSUPPORTED_METHOD"}
	ExcCannotParseText          = Exception{6, "CANNOT_PARSE_TEXT"}
	ExcNoSuchColumnInTable      = Exception{16, "NO_SUCH_COLUMN_IN_TABLE"}
	ExcCannotParseInput         = Exception{27, "CANNOT_PARSE_INPUT_ASSERTION_FAILED"}
	ExcBadArguments             = Exception{36, "BAD_ARGUMENTS"}
	ExcNotImplemented           = Exception{48, "NOT_IMPLEMENTED"}
	ExcUnknownTable             = Exception{60, "UNKNOWN_TABLE"}
	ExcSyntaxError              = Exception{62, "SYNTAX_ERROR"}
	ExcUnknownFormat            = Exception{73, "UNKNOWN_FORMAT"}
	ExcUnknownDatabase          = Exception{81, "UNKNOWN_DATABASE"}
	ExcIncorrectData            = Exception{117, "INCORRECT_DATA"}
	ExcTooManyRows              = Exception{158, "TOO_MANY_ROWS"}
	ExcTimeoutExceeded          = Exception{159, "TIMEOUT_EXCEEDED"}
	ExcReadonly                 = Exception{164, "READONLY"}
	ExcTooManySimultaneous      = Exception{202, "TOO_MANY_SIMULTANEOUS_QUERIES"}
	ExcNetworkError             = Exception{210, "NETWORK_ERROR"}
	ExcQueryWasCancelled        = Exception{394, "QUERY_WAS_CANCELLED"}
	ExcTooManyBytes             = Exception{307, "TOO_MANY_BYTES"}
	ExcAccessDenied             = Exception{497, "ACCESS_DENIED"}
	ExcAuthenticationFailed     = Exception{516, "AUTHENTICATION_FAILED"}
	ExcUnknownException         = Exception{1002, "UNKNOWN_EXCEPTION"}
	ExcAllConnectionTriesFailed = Exception{279, "ALL_CONNECTION_TRIES_FAILED"}
	ExcUnknownSetting           = Exception{115, "UNKNOWN_SETTING"}
	ExcUnknownIdentifier        = Exception{47, "UNKNOWN_IDENTIFIER"}
	ExcUnknownFunction          = Exception{46, "UNKNOWN_FUNCTION"}
	ExcIllegalTypeOfArgument    = Exception{43, "ILLEGAL_TYPE_OF_ARGUMENT"}
	ExcTypeMismatch             = Exception{53, "TYPE_MISMATCH"}
	ExcMemoryLimitExceeded      = Exception{241, "MEMORY_LIMIT_EXCEEDED"}
	ExcChecksumDoesntMatch      = Exception{40, "CHECKSUM_DOESNT_MATCH"}
	ExcCannotDecompress         = Exception{271, "CANNOT_DECOMPRESS"}
	ExcUnknownCompressionMethod = Exception{89, "UNKNOWN_COMPRESSION_METHOD"}
)

// ExceptionByNumber returns the ClickHouse error of number code when this package names it,
// for naming an error the engine itself reported with its code.
func ExceptionByNumber(code int) (Exception, bool) {
	for _, e := range [...]Exception{ExcUnsupportedMethod, ExcCannotParseText, ExcNoSuchColumnInTable, ExcCannotParseInput,
		ExcBadArguments, ExcNotImplemented, ExcUnknownTable, ExcSyntaxError, ExcUnknownFormat, ExcUnknownDatabase,
		ExcIncorrectData, ExcTooManyRows, ExcTimeoutExceeded, ExcReadonly, ExcTooManySimultaneous, ExcNetworkError,
		ExcQueryWasCancelled, ExcTooManyBytes, ExcAccessDenied, ExcAuthenticationFailed, ExcAllConnectionTriesFailed,
		ExcUnknownSetting, ExcUnknownIdentifier, ExcUnknownFunction, ExcIllegalTypeOfArgument, ExcTypeMismatch,
		ExcMemoryLimitExceeded, ExcChecksumDoesntMatch, ExcCannotDecompress, ExcUnknownCompressionMethod} {
		if e.Code == code {
			return e, true
		}
	}
	return Exception{}, false
}

// exceptionByCode maps the gateway's stable error codes (docs/api.md) to the ClickHouse error a
// ClickHouse client is shown for them. A code missing here falls back by its prefix
// (exceptionByPrefix), then to UNKNOWN_EXCEPTION. This is the one table of that mapping.
var exceptionByCode = map[string]Exception{
	"auth.anonymous_ops":                 ExcAuthenticationFailed,
	"auth.table_not_allowed":             ExcAccessDenied,
	"auth.missing_scope":                 ExcAccessDenied,
	"auth.origin_not_allowed":            ExcAccessDenied,
	"auth.role_not_allowed":              ExcAccessDenied,
	"auth.operator_key_not_allowed":      ExcAccessDenied,
	"database.not_allowed":               ExcAccessDenied,
	"ingest.invalid_columns":             ExcNoSuchColumnInTable,
	"ingest.types_mismatch":              ExcIncorrectData,
	"ingest.malformed_header":            ExcCannotParseInput,
	"ingest.malformed_binary":            ExcCannotParseInput,
	"ingest.malformed_json":              ExcCannotParseInput,
	"ingest.malformed_csv":               ExcCannotParseInput,
	"ingest.malformed_tsv":               ExcCannotParseInput,
	"ingest.empty_body":                  ExcCannotParseInput,
	"ingest.corrupt_body":                ExcCannotParseInput,
	"ingest.unsupported_encoding":        ExcUnknownFormat,
	"ingest.dead_lettered":               ExcIncorrectData,
	"clickhouse.not_implemented":         ExcNotImplemented,
	"clickhouse.unknown_format":          ExcUnknownFormat,
	"clickhouse.syntax_error":            ExcSyntaxError,
	"clickhouse.readonly":                ExcReadonly,
	"clickhouse.checksum_mismatch":       ExcChecksumDoesntMatch,
	"clickhouse.bad_compressed_block":    ExcCannotDecompress,
	"database.unknown":                   ExcUnknownDatabase,
	"ingest.body_too_large":              ExcTooManyBytes,
	"ingest.canceled":                    ExcQueryWasCancelled,
	"ingest.invalid_parameter":           ExcBadArguments,
	"ingest.invalid_rows":                ExcCannotParseInput,
	"ingest.invalid_table":               ExcUnknownTable,
	"ingest.queue_full":                  ExcTooManySimultaneous,
	"ingest.queue_unavailable":           ExcNetworkError,
	"ingest.too_many_rows":               ExcTooManyRows,
	"ingest.unsupported_media_type":      ExcUnknownFormat,
	"ingest.wait_timeout":                ExcTimeoutExceeded,
	"limits.queries":                     ExcTooManySimultaneous,
	"limits.requests":                    ExcTooManySimultaneous,
	"limits.rows":                        ExcTooManySimultaneous,
	"policy.column_denied":               ExcAccessDenied,
	"queue.unavailable":                  ExcNetworkError,
	"sql.host_access":                    ExcAccessDenied,
	"sql.outside_tenant":                 ExcAccessDenied,
	"store.rejected":                     ExcBadArguments,
	"store.unavailable":                  ExcAllConnectionTriesFailed,
	"table.unknown":                      ExcUnknownTable,
	"tenant.unknown":                     ExcAuthenticationFailed,
	"http.method_not_allowed":            ExcUnsupportedMethod,
	"not_found":                          ExcUnknownTable,
	"dedupe.unavailable":                 ExcNetworkError,
	"idempotency.in_flight":              ExcTooManySimultaneous,
	"idempotency.key_reused":             ExcBadArguments,
	"idempotency.unsettled":              ExcNetworkError,
	"idempotency.retention":              ExcBadArguments,
	"sql.invalid_request":                ExcSyntaxError,
	"ops_sql.allow_host_table_functions": ExcAccessDenied,
	"query.rejected":                     ExcSyntaxError,
	"query.unknown_table":                ExcUnknownTable,
	"query.limit_exceeded":               ExcTooManyRows,
	"query.canceled":                     ExcQueryWasCancelled,
	"query.invalid_request":              ExcBadArguments,
	"clickhouse.unknown_setting":         ExcUnknownSetting,
	"clickhouse.bad_setting":             ExcBadArguments,
}

// exceptionByPrefix is the fallback of exceptionByCode, by the part of a code before its dot.
var exceptionByPrefix = map[string]Exception{
	"auth":   ExcAuthenticationFailed,
	"policy": ExcAccessDenied,
	"limits": ExcTooManySimultaneous,
	"sql":    ExcSyntaxError,
}

// ExceptionFor returns the ClickHouse error a ClickHouse client is shown for the gateway error
// code.
func ExceptionFor(code string) Exception {
	if e, ok := exceptionByCode[code]; ok {
		return e
	}
	prefix, _, _ := strings.Cut(code, ".")
	if e, ok := exceptionByPrefix[prefix]; ok {
		return e
	}
	return ExcUnknownException
}

// ExceptionHeader carries the ClickHouse error code of an error answer, as ClickHouse sends it.
const ExceptionHeader = "X-ClickHouse-Exception-Code"

// GatewayCodeHeader carries the gateway's own stable error code next to the ClickHouse one, so
// a client that knows WaveHouse can tell, say, a full queue from a rate limit.
const GatewayCodeHeader = "X-Wavehouse-Error-Code"

// ClickHouseVersion is the ClickHouse version the ClickHouse HTTP interface reports: the
// result of version() and the "(version …)" of every error it answers, reads and inserts
// alike. Clients gate features on it (see query.ServerVersion for why this one).
const ClickHouseVersion = "25.8.1.1"

// WriteClickHouseError writes e the way ClickHouse's HTTP interface answers an error: e's status,
// a plain-text body "Code: N. DB::Exception: <message> (NAME) (version …)" that the official
// clients parse, the X-ClickHouse-Exception-Code header, and the gateway's code in
// X-Wavehouse-Error-Code. exc, when its Code is not zero, overrides the mapping of e.Code.
func WriteClickHouseError(w http.ResponseWriter, e Error, exc Exception) {
	if exc.Code == 0 {
		exc = ExceptionFor(e.Code)
	}
	h := w.Header()
	if e.RetryAfter > 0 {
		secs := int((e.RetryAfter + time.Second - 1) / time.Second)
		h.Set("Retry-After", strconv.Itoa(secs))
	}
	h.Set("Content-Type", "text/plain; charset=UTF-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set(ExceptionHeader, strconv.Itoa(exc.Code))
	if e.Code != "" {
		h.Set(GatewayCodeHeader, e.Code)
	}
	status := e.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	w.WriteHeader(status)
	_, _ = w.Write(AppendClickHouseException(nil, exc, e.Message))
}

// AppendClickHouseException appends the ClickHouse error text of exc with message to dst.
func AppendClickHouseException(dst []byte, exc Exception, message string) []byte {
	dst = append(dst, "Code: "...)
	dst = strconv.AppendInt(dst, int64(exc.Code), 10)
	dst = append(dst, ". DB::Exception: "...)
	dst = append(dst, strings.TrimRight(message, "\n")...)
	dst = append(dst, " ("...)
	dst = append(dst, exc.Name...)
	dst = append(dst, ") (version "...)
	dst = append(dst, ClickHouseVersion...)
	return append(dst, ")\n"...)
}
