package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/chformat"
	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/ingest/request"
	"github.com/wavehouse/wavehouse/internal/limits"
	"github.com/wavehouse/wavehouse/internal/mq"
)

// The binary input formats, read by chformat into canonical JSON rows that then take the
// JSONCompactEachRow path.
const (
	formatNative                     = "Native"
	formatRowBinary                  = "RowBinary"
	formatRowBinaryWithNamesAndTypes = "RowBinaryWithNamesAndTypes"
)

// insertFormats are the formats an INSERT may name, for error messages and docs.
func insertFormats() []string {
	return append(request.ClickHouseFormats(), formatRowBinary, formatRowBinaryWithNamesAndTypes, formatNative)
}

// The longest excerpts of a binary body's names and of a decoder's message that an error quotes.
const (
	maxBinaryNameBytes = 128
	maxBinaryErrBytes  = 512
)

// binaryFormat returns the canonical name of a binary input format, "" for any other name.
func binaryFormat(name string) string {
	for _, f := range []string{formatNative, formatRowBinary, formatRowBinaryWithNamesAndTypes} {
		if strings.EqualFold(name, f) {
			return f
		}
	}
	return ""
}

// unsupportedInputSettings are the settings that change how ClickHouse reads input, refused
// unless they have the value the gateway's reading matches, rather than silently ignored.
var unsupportedInputSettings = map[string]string{
	"input_format_skip_unknown_fields":          "0",
	"input_format_allow_errors_num":             "0",
	"input_format_allow_errors_ratio":           "0",
	"input_format_null_as_default":              "1",
	"input_format_defaults_for_omitted_fields":  "1",
	"input_format_with_names_use_header":        "1",
	"input_format_with_types_use_header":        "1",
	"input_format_csv_empty_as_default":         "1",
	"input_format_import_nested_json":           "0",
	"input_format_json_read_objects_as_strings": "",
	"format_csv_delimiter":                      ",",
	"format_custom_field_delimiter":             "",
}

// clickhouseInsert serves an INSERT … FORMAT: it checks the key and the database, reads the
// settings and the format, and hands the call to the steps /v1/ingest runs (runIngest).
func (a *API) clickhouseInsert(w http.ResponseWriter, r *http.Request, st clickhouseStatement, start time.Time) {
	outcome := outcomeError
	defer func() { a.metrics.observeIngest(outcome, start) }()
	ins := st.ins
	call := a.newCall(r, start, ins.Table)
	call.out = chAnswers{r: r}
	fail := func(e httpx.Error, o string) {
		outcome = o
		writeCH(w, r, e)
	}
	p, _ := auth.FromContext(r.Context())
	if e := auth.Check(p, auth.ScopeIngest, ins.Table); e != nil {
		fail(*e, outcomeRejected)
		return
	}
	if !validTableName(ins.Table) {
		fail(httpx.Error{Status: http.StatusBadRequest, Code: "ingest.invalid_table", Message: "table name must be 1-255 printable characters"}, outcomeRejected)
		return
	}
	target, herr := a.targetOf(call.tenant)
	if herr != nil {
		fail(*herr, outcomeError)
		return
	}
	db := ins.Database
	if db == "" {
		db = r.URL.Query().Get("database")
	}
	if db != "" && db != "default" && db != target.Database {
		fail(httpx.Error{Status: http.StatusForbidden, Code: "database.not_allowed",
			Message: fmt.Sprintf("database %q is not this tenant's: omit the database, or name default or %s", db, target.Database)}, outcomeRejected)
		return
	}
	if herr := insertSettings(&call, r, st.settings); herr != nil {
		fail(*herr, outcomeRejected)
		return
	}
	call.columns, call.encoding, call.body = ins.Columns, st.encoding, st.data
	call.interp = []string{"clickhouse", st.sql, st.encoding}
	binary := binaryFormat(ins.Format)
	if binary == "" {
		f, ok := request.ClickHouseFormat(ins.Format)
		if !ok {
			fail(httpx.Error{Status: http.StatusBadRequest, Code: "clickhouse.unknown_format",
				Message: fmt.Sprintf("Unknown input format %s; the gateway reads %s", ins.Format, strings.Join(insertFormats(), ", "))}, outcomeRejected)
			return
		}
		call.format = f
	}
	if herr := a.resolve(&call); herr != nil {
		fail(*herr, outcomeError)
		return
	}
	if binary != "" {
		if herr := a.decodeBinary(&call, binary); herr != nil {
			fail(*herr, outcomeRejected)
			return
		}
	}
	outcome = a.runIngest(w, r, call)
}

// insertSettings reads what an INSERT's settings and parameters ask of the call: waiting for
// the insert (?wait=committed, or async_insert=1 without wait_for_async_insert=0), the
// idempotency key (the Idempotency-Key header, else insert_deduplication_token), and no
// setting that would change how the input is read.
func insertSettings(call *ingestCall, r *http.Request, settings url.Values) *httpx.Error {
	switch r.URL.Query().Get("wait") {
	case "":
	case "committed":
		call.wait = true
	default:
		return &httpx.Error{Status: http.StatusBadRequest, Code: "ingest.invalid_parameter", Message: `wait must be "committed" or absent`}
	}
	if truthy(settings.Get("async_insert")) && settings.Get("wait_for_async_insert") != "0" {
		call.wait = true
	}
	call.idemKey = r.Header.Get(IdempotencyHeader)
	if call.idemKey == "" {
		call.idemKey = settings.Get("insert_deduplication_token")
	}
	var bad []string
	for name, want := range unsupportedInputSettings {
		if v, ok := settings[name]; ok && v[0] != want {
			bad = append(bad, name+"="+v[0])
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return &httpx.Error{Status: http.StatusNotImplemented, Code: "clickhouse.not_implemented",
			Message: "the gateway reads input one way and does not honour " + strings.Join(bad, ", ") + " (docs/clickhouse.md#settings)"}
	}
	return nil
}

func truthy(v string) bool { return v == "1" || strings.EqualFold(v, "true") }

// decodeBinary converts a Native or RowBinary body to canonical JSON rows, which the call then
// reads as JSONCompactEachRow over the columns the body holds.
func (a *API) decodeBinary(call *ingestCall, format string) *httpx.Error {
	body, herr := request.Decode(call.encoding, call.body, a.cfg.Limits)
	if herr != nil {
		return herr
	}
	var names, types []string
	byName := map[string]int{}
	for i, c := range call.cols {
		byName[c.Name] = i
	}
	if call.columns != nil {
		for _, n := range call.columns {
			i, ok := byName[n]
			if !ok {
				return &httpx.Error{Status: http.StatusBadRequest, Code: request.CodeInvalidColumns, Message: fmt.Sprintf("the column list cannot be used: column %q does not exist in the table", n)}
			}
			names, types = append(names, n), append(types, call.cols[i].TypeName)
		}
	} else {
		for _, c := range call.cols {
			if c.Writable() {
				names, types = append(names, c.Name), append(types, c.TypeName)
			}
		}
	}
	var d chformat.Decoded
	var err error
	switch format {
	case formatNative:
		d, err = chformat.DecodeNative(body, 0, nil)
	default:
		d, err = chformat.DecodeRowBinary(body, names, types, format == formatRowBinaryWithNamesAndTypes, nil)
	}
	if err != nil {
		return binaryErr(format, err)
	}
	compact, _ := request.ClickHouseFormat("JSONCompactEachRow")
	call.format, call.body, call.encoding, call.columns = compact, d.JSON, "", d.Names
	return nil
}

// binaryErr answers a body chformat cannot read.
func binaryErr(format string, err error) *httpx.Error {
	// A body that is not what its format says (compressed blocks sent without decompress=1,
	// say) can make megabytes read as a column's name or type: quote no more than an excerpt.
	msg := request.Excerpt(strings.ReplaceAll(err.Error(), "chformat: ", ""), maxBinaryErrBytes)
	var re *chformat.RowError
	if errors.As(err, &re) {
		msg = fmt.Sprintf("column %q: %s (at row %d)", request.Excerpt(re.Column, maxBinaryNameBytes),
			request.Excerpt(strings.ReplaceAll(re.Err.Error(), "chformat: ", ""), maxBinaryErrBytes), re.Row+1)
	}
	var ce *chtype.Error
	switch {
	case errors.Is(err, chformat.ErrInvalidValue) && re != nil && errors.As(err, &ce):
		return invalidValue(format, re, ce)
	case errors.Is(err, chformat.ErrHeaderMismatch):
		return &httpx.Error{Status: http.StatusBadRequest, Code: request.CodeTypesMismatch, Message: format + " header: " + msg}
	case errors.Is(err, chformat.ErrUnsupportedType):
		return &httpx.Error{Status: http.StatusNotImplemented, Code: "clickhouse.not_implemented", Message: format + ": " + msg}
	case errors.Is(err, chformat.ErrTooLarge):
		return &httpx.Error{Status: http.StatusRequestEntityTooLarge, Code: request.CodeBodyTooLarge, Message: format + ": " + msg}
	}
	return &httpx.Error{Status: http.StatusBadRequest, Code: "ingest.malformed_binary", Message: "Cannot read " + format + " data: " + msg}
}

// invalidValue refuses a binary body holding a value its column's type does not admit (an enum
// value the type does not name) as the text formats refuse a bad row: ingest.invalid_rows
// (Code 27) with the row error naming the row, the column and the value. A binary body is read
// no further than its first invalid value, so the details count no total (0).
func invalidValue(format string, re *chformat.RowError, ce *chtype.Error) *httpx.Error {
	msg := ce.Message
	if ce.Path != "" {
		msg = "at " + ce.Path + ": " + msg
	}
	row := request.RowError{Row: re.Row, Column: re.Column, Code: string(ce.Code), Message: fmt.Sprintf("column %q: %s", re.Column, msg)}
	return &httpx.Error{Status: http.StatusBadRequest, Code: request.CodeInvalidRows,
		Message: fmt.Sprintf("%s row %d: %s; nothing was inserted (the body is read no further than its first invalid value)", format, re.Row, row.Message),
		Details: request.InvalidRows{Rejected: 1, ErrorCount: 1, ErrorsByCode: map[string]int{row.Code: 1}, Errors: []request.RowError{row}}}
}

// chAnswers answers the ClickHouse interface's INSERTs.
type chAnswers struct {
	r *http.Request
}

func (c chAnswers) fail(w http.ResponseWriter, e httpx.Error) { writeCH(w, c.r, e) }

func (c chAnswers) limited(w http.ResponseWriter, d limits.Decision) {
	writeCH(w, c.r, limits.RejectError(d))
}

// chRecord is what the idempotency record of an accepted INSERT stores in place of its empty
// body: the headers that carry the answer, which a replay sends again.
type chRecord struct {
	Summary   json.RawMessage `json:"summary"`
	Sequence  string          `json:"sequence,omitempty"`
	Committed string          `json:"committed,omitempty"`
}

// replay sends a recorded answer again: ClickHouse's empty 2xx with the original's
// X-ClickHouse-Summary (its counts, read back from the record: chRecord), or the error as first
// sent, its exception code read back from its "Code: N." prefix.
func (c chAnswers) replay(w http.ResponseWriter, resp dedupe.Response) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=UTF-8")
	if resp.Status/100 == 2 {
		// A record stored before chRecord holds the empty body itself: no summary to give.
		var rec chRecord
		if json.Unmarshal(resp.Body, &rec) == nil && len(rec.Summary) > 0 {
			h.Set(clickHouseSummaryHeader, string(rec.Summary))
			if rec.Sequence != "" {
				h.Set("X-Wavehouse-Sequence", rec.Sequence)
			}
			if rec.Committed != "" {
				h.Set(committedHeader, rec.Committed)
			}
		}
		w.WriteHeader(resp.Status)
		return
	}
	if rest, ok := strings.CutPrefix(string(resp.Body), "Code: "); ok {
		if n, _, ok := strings.Cut(rest, "."); ok {
			h.Set(httpx.ExceptionHeader, n)
		}
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// accepted answers an INSERT as ClickHouse does: an empty body with X-ClickHouse-Summary. With
// a wait for the insert, 200 once the rows are in ClickHouse, 202 (a success the client does not
// retry: the rows are durably queued) when they are not yet, and an error when they were
// dead-lettered.
func (c chAnswers) accepted(w http.ResponseWriter, call ingestCall, res request.Result, pub mq.PublishResult, wr waitResult) {
	status := http.StatusOK
	if call.wait {
		if wr.deadLettered {
			writeCH(w, c.r, httpx.Error{Status: http.StatusUnprocessableEntity, Code: "ingest.dead_lettered",
				Message: fmt.Sprintf("the rows were queued (sequence %s) but their insert failed; they are in the dead-letter queue (GET /v1/ops/dlq/%s)", pub.Position, call.table)})
			return
		}
		w.Header().Set(committedHeader, strconv.FormatBool(wr.committed))
		if !wr.committed {
			status = http.StatusAccepted
		}
	}
	written := 0
	for _, s := range res.Segments {
		written += len(s.Data)
	}
	summary, _ := json.Marshal(map[string]string{
		"read_rows": strconv.Itoa(res.Total), "read_bytes": strconv.Itoa(res.Bytes),
		"written_rows": strconv.Itoa(res.Accepted), "written_bytes": strconv.Itoa(written),
		"total_rows_to_read": "0", "result_rows": strconv.Itoa(res.Accepted), "result_bytes": strconv.Itoa(written),
		"elapsed_ns": strconv.FormatInt(time.Since(call.start).Nanoseconds(), 10),
	})
	h := w.Header()
	h.Set(clickHouseSummaryHeader, string(summary))
	h.Set("X-Wavehouse-Sequence", pub.Position.String())
	h.Set("Content-Type", "text/plain; charset=UTF-8")
	if rs, ok := w.(recordSetter); ok {
		rec, _ := json.Marshal(chRecord{Summary: summary, Sequence: pub.Position.String(), Committed: h.Get(committedHeader)})
		rs.setRecord(rec)
	}
	w.WriteHeader(status)
}

// clickhouseMessage gives an ingest.invalid_rows error the message a ClickHouse client shows:
// the first row error, its row counted from 1 as ClickHouse counts, and the totals.
func clickhouseMessage(e httpx.Error) httpx.Error {
	d, ok := e.Details.(request.InvalidRows)
	if !ok || len(d.Errors) == 0 {
		return e
	}
	first := d.Errors[0]
	where := fmt.Sprintf("at row %d", first.Row+1)
	if first.Line > 0 {
		where += fmt.Sprintf(", line %d", first.Line)
	}
	if d.Total == 0 {
		// A binary body (invalidValue): read up to its first invalid value only.
		e.Message = fmt.Sprintf("Cannot parse input: %s (%s): nothing was inserted (the body is read no further than its first invalid value)", first.Message, where)
		return e
	}
	e.Message = fmt.Sprintf("Cannot parse input: %s (%s): %d of %d rows are invalid, %d errors; nothing was inserted (send Accept: application/json for every row error)",
		first.Message, where, d.Rejected, d.Total, d.ErrorCount)
	return e
}
