package httpx

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"
)

// clientErrorRe is what the official Node client (@clickhouse/client) matches an error body
// against, without its look-ahead (Go's regexp has none): code, message and type.
var clientErrorRe = regexp.MustCompile(`(?s)(Code|Error): (?P<code>\d+).*Exception: (?P<message>.+)\((?P<type>[A-Z0-9_]+?)\)`)

func TestWriteClickHouseErrorIsWhatClientsParse(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteClickHouseError(rec, Error{Status: http.StatusBadRequest, Code: "ingest.invalid_rows", Message: "row 3, column score: not a Float64", RetryAfter: 1500 * time.Millisecond}, Exception{})
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("status %d", rec.Code)
	}
	body := rec.Body.String()
	if want := "Code: 27. DB::Exception: row 3, column score: not a Float64 (CANNOT_PARSE_INPUT_ASSERTION_FAILED) (version " + ClickHouseVersion + ")\n"; body != want {
		t.Fatalf("body %q, want %q", body, want)
	}
	m := clientErrorRe.FindStringSubmatch(body)
	if m == nil || m[2] != "27" || m[4] != "CANNOT_PARSE_INPUT_ASSERTION_FAILED" {
		t.Fatalf("the client's pattern reads %q from %q", m, body)
	}
	for h, want := range map[string]string{ExceptionHeader: "27", GatewayCodeHeader: "ingest.invalid_rows", "Retry-After": "2"} {
		if got := rec.Header().Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
}

func TestExceptionFor(t *testing.T) {
	for code, want := range map[string]Exception{
		"table.unknown":      ExcUnknownTable,
		"auth.something_new": ExcAuthenticationFailed,
		"no_such.code":       ExcUnknownException,
		"limits.requests":    ExcTooManySimultaneous,
	} {
		if got := ExceptionFor(code); got != want {
			t.Errorf("ExceptionFor(%q) = %v, want %v", code, got, want)
		}
	}
}
