package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// Limits the matrix gateways run with, small so the 413 cases are cheap to send.
const (
	testMaxRows      = 50
	testMaxBodyBytes = 64 << 10
)

// apiError is the JSON body of every error answer.
type apiError struct {
	Code      string `json:"code"`
	Error     string `json:"error"`
	Retryable bool   `json:"retryable"`
	Details   struct {
		Total      int        `json:"total"`
		Rejected   int        `json:"rejected"`
		ErrorCount int        `json:"error_count"`
		Errors     []rowError `json:"errors"`
		Accepted   []string   `json:"accepted"`
	} `json:"details"`
}

type rowError struct {
	Row     int    `json:"row"`
	Line    int    `json:"line"`
	Column  string `json:"column"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// rowWith returns base (a JSON object) with id replaced and mutate applied.
func rowWith(t *testing.T, base, id string, mutate func(m map[string]any)) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(base))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	m["id"] = id
	if mutate != nil {
		mutate(m)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(buf.String())
}

// requireError checks an error answer's status and code and returns its body.
func requireError(t *testing.T, what string, resp gatewaybin.Response, status int, code string) apiError {
	t.Helper()
	var e apiError
	if resp.Status != status {
		t.Fatalf("%s: %s, want %d %s", what, resp, status, code)
	}
	resp.JSON(t, &e)
	if e.Code != code || e.Error == "" {
		t.Fatalf("%s: %s, want code %s and a message", what, resp, code)
	}
	return e
}

// checkValidation sends every invalid request of the issue to table (of typesDDL) and checks
// each answer; none may enqueue anything. It returns the ids of the rows partial requests
// accepted, which the caller expects in the table.
func checkValidation(t *testing.T, g *gateway, table, base string) (accepted []string) {
	t.Helper()
	valid := func(id string) string { return rowWith(t, base, id, nil) }
	set := func(col string, v any) func(map[string]any) { return func(m map[string]any) { m[col] = v } }

	rowCases := []struct {
		name   string
		mutate func(map[string]any)
		column string
		code   string
	}{
		{"unknown field", set("nope", 1), "nope", "unknown_column"},
		{"missing required column", func(m map[string]any) { delete(m, "u") }, "u", "missing_column"},
		{"wrong JSON type", set("s", 12), "s", "type_mismatch"},
		{"string for an array", set("a", "x"), "a", "type_mismatch"},
		{"UInt8 = 300", set("b", 300), "b", "out_of_range"},
		{"negative UInt64", set("u", json.Number("-1")), "u", "out_of_range"},
		{"UInt64 max + 1", set("u", json.Number("18446744073709551616")), "u", "out_of_range"},
		{"bad date", set("d", "2024-13-45"), "d", "invalid_value"},
		{"bad datetime", set("dt", "yesterday"), "dt", "invalid_value"},
		{"bad UUID", set("uu", "not-a-uuid"), "uu", "invalid_value"},
		{"unknown enum value", set("e", "zzz"), "e", "invalid_value"},
		{"FixedString too long", set("fs", "abcd"), "fs", "too_long"},
		{"nested array", set("ai", []any{[]any{1}}), "ai", "type_mismatch"},
		{"null into non-Nullable", set("s", nil), "s", "null_not_allowed"},
	}
	for i, c := range rowCases {
		// Row 0 is valid, row 1 is not: the atomic request is refused as a whole.
		body := valid(fmt.Sprintf("bad%d-ok", i)) + "\n" + rowWith(t, base, fmt.Sprintf("bad%d", i), c.mutate) + "\n"
		e := requireError(t, c.name, g.ingest(t, table, "", ctNDJSON, []byte(body)), http.StatusBadRequest, "ingest.invalid_rows")
		if e.Details.Total != 2 || e.Details.Rejected != 1 || e.Details.ErrorCount < 1 || len(e.Details.Errors) < 1 {
			t.Errorf("%s: details %+v, want total 2, rejected 1 and its errors", c.name, e.Details)
			continue
		}
		got := e.Details.Errors[0]
		if got.Row != 1 || got.Column != c.column || got.Code != c.code || got.Message == "" {
			t.Errorf("%s: row error %+v, want row 1 column %s code %s with a message", c.name, got, c.column, c.code)
		}
	}

	// Error counts stay exact beyond the reported ones.
	var many []string
	for i := range 30 {
		many = append(many, rowWith(t, base, fmt.Sprintf("many%d", i), set("b", 1000)))
	}
	e := requireError(t, "30 bad rows", g.ingest(t, table, "", ctJSON, []byte("["+strings.Join(many, ",")+"]")), http.StatusBadRequest, "ingest.invalid_rows")
	if e.Details.Total != 30 || e.Details.Rejected != 30 || e.Details.ErrorCount != 30 {
		t.Errorf("30 bad rows: details total %d rejected %d error_count %d, want 30 each", e.Details.Total, e.Details.Rejected, e.Details.ErrorCount)
	}

	// Request-level refusals.
	requireError(t, "empty body", g.ingest(t, table, "", ctJSON, nil), http.StatusBadRequest, "ingest.empty_body")
	requireError(t, "empty array", g.ingest(t, table, "", ctJSON, []byte("[]")), http.StatusBadRequest, "ingest.empty_body")
	requireError(t, "malformed JSON", g.ingest(t, table, "", ctJSON, []byte(`{"id":`)), http.StatusBadRequest, "ingest.malformed_json")
	e = requireError(t, "text/plain", g.ingest(t, table, "", "text/plain", []byte(valid("ct"))), http.StatusUnsupportedMediaType, "ingest.unsupported_media_type")
	if len(e.Details.Accepted) == 0 {
		t.Errorf("415 for text/plain lists no accepted media types")
	}
	requireError(t, "xz encoding", g.client.Do(t, http.MethodPost, "/v1/ingest/"+table, http.Header{"Content-Type": {ctJSON}, "Content-Encoding": {"xz"}}, []byte(valid("ce"))),
		http.StatusUnsupportedMediaType, "ingest.unsupported_encoding")
	requireError(t, "corrupt gzip", g.client.Do(t, http.MethodPost, "/v1/ingest/"+table, http.Header{"Content-Type": {ctJSON}, "Content-Encoding": {"gzip"}}, []byte(valid("gz"))),
		http.StatusBadRequest, "ingest.corrupt_body")
	requireError(t, "unknown table", g.ingest(t, "no_such_table", "", ctJSON, []byte(valid("nt"))), http.StatusNotFound, "table.unknown")
	var rowsOver []string
	for i := range testMaxRows + 1 {
		rowsOver = append(rowsOver, valid(fmt.Sprintf("over%d", i)))
	}
	requireError(t, "too many rows", g.ingest(t, table, "", ctNDJSON, []byte(strings.Join(rowsOver, "\n"))), http.StatusRequestEntityTooLarge, "ingest.too_many_rows")
	big := rowWith(t, base, "big", set("s", strings.Repeat("x", testMaxBodyBytes)))
	requireError(t, "body too large", g.ingest(t, table, "", ctJSON, []byte(big)), http.StatusRequestEntityTooLarge, "ingest.body_too_large")
	bomb := gzipped([]byte(big))
	if len(bomb) >= testMaxBodyBytes {
		t.Fatalf("gzip of the big row is %d bytes, not below the limit", len(bomb))
	}
	requireError(t, "decompressed body too large", g.client.Do(t, http.MethodPost, "/v1/ingest/"+table, http.Header{"Content-Type": {ctJSON}, "Content-Encoding": {"gzip"}}, bomb),
		http.StatusRequestEntityTooLarge, "ingest.body_too_large")

	// Partial: the valid rows are accepted (and committed), the invalid one reported.
	body := "[" + valid("p-ok-0") + "," + rowWith(t, base, "p-bad-1", set("b", 300)) + "," + valid("p-ok-2") + "]"
	resp := g.ingest(t, table, "partial=true&wait=committed", ctJSON, []byte(body))
	var pr struct {
		Accepted  int        `json:"accepted"`
		Rejected  int        `json:"rejected"`
		Committed *bool      `json:"committed"`
		Errors    []rowError `json:"errors"`
	}
	if resp.Status != http.StatusOK {
		t.Fatalf("partial: %s, want 200", resp)
	}
	resp.JSON(t, &pr)
	if pr.Accepted != 2 || pr.Rejected != 1 || pr.Committed == nil || !*pr.Committed || len(pr.Errors) != 1 ||
		pr.Errors[0].Row != 1 || pr.Errors[0].Column != "b" || pr.Errors[0].Code != "out_of_range" {
		t.Fatalf("partial: %s, want accepted 2, rejected 1, committed, one out_of_range error on row 1 column b", resp)
	}
	// Partial with no valid row accepts nothing.
	requireError(t, "partial, all invalid", g.ingest(t, table, "partial=true", ctJSON, []byte(rowWith(t, base, "p-bad-only", set("b", 300)))),
		http.StatusBadRequest, "ingest.invalid_rows")
	return []string{"p-ok-0", "p-ok-2"}
}
