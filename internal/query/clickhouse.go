package query

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/ch-go/compress"

	"github.com/wavehouse/wavehouse/internal/chformat"
	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/query/sqlscan"
	"github.com/wavehouse/wavehouse/internal/store"
)

// ClickHouseRead is one statement of the ClickHouse HTTP interface that is not an INSERT: its
// text (the query parameter and the body, assembled by the caller), the default_format URL
// parameter (used when the SQL has no FORMAT clause), every URL parameter, and the query id the
// client chose (query_id; empty: one is generated).
type ClickHouseRead struct {
	SQL, Format string
	Settings    url.Values
	QueryID     string
	// JSONErrors asks for the gateway's JSON error form (httpx.WantsJSONErrors) instead of
	// ClickHouse's, for an error found before the answer's status line.
	JSONErrors bool
}

// What the ClickHouse interface says about the server, in the connect queries of the official
// clients (clickhouse-go: SELECT displayName(), version(), revision(), timezone()).
const (
	// ServerDisplayName is displayName().
	ServerDisplayName = "wavehouse"
	// ServerVersion is version(). clickhouse-go gates features on it: 25.8 is the oldest
	// version it supports without a warning, and the newest feature it switches on below
	// 25.8 (the flattened Dynamic/JSON serialisation, 25.6) only concerns Dynamic and JSON
	// columns, which the gateway's Native output sends as String. Later gates (none in
	// v2.51.0) stay off.
	// The one value lives in httpx, which writes it into every error of the interface too.
	ServerVersion = httpx.ClickHouseVersion
	// ServerTimezone is timezone(): the store's sessions run in UTC.
	ServerTimezone = "UTC"
	// ServerRevision is revision(): the protocol revision the gateway claims, which its Native
	// decoder reads and its Native encoder writes at most.
	ServerRevision = chformat.Revision
)

// defaultCHFormat is ClickHouse's format when a query names none.
const defaultCHFormat = "TabSeparated"

// chSettingsIgnored are the URL parameters a ClickHouse client sends that change nothing in a
// read's result: credentials and the database (the caller's), the query id, the format
// default, transport and progress options, session and logging options. They are accepted
// and ignored; see docs/clickhouse.md#reads.
var chSettingsIgnored = map[string]bool{
	"query": true, "user": true, "password": true, "quota_key": true, "database": true, "query_id": true,
	"default_format": true, "session_id": true, "session_timeout": true, "session_check": true,
	"enable_http_compression": true, "http_zlib_compression_level": true, "decompress": true,
	"send_progress_in_http_headers": true, "http_headers_progress_interval_ms": true,
	"wait_end_of_query": true, "buffer_size": true, "http_response_buffer_size": true,
	"max_block_size": true, "max_threads": true, "log_queries": true, "log_comment": true,
	"cancel_http_readonly_queries_on_client_close": true, "http_wait_end_of_query": true,
	"network_zstd_compression_level": true, "use_client_time_zone": true,
}

// chRequest is what the URL parameters of a read set.
type chRequest struct {
	format  chFormat
	maxRows uint64
	maxTime time.Duration
	params  map[string][]byte
	noCache bool
	// compress is compress=1: the response in ClickHouse's compressed blocks, by method
	// (network_compression_method).
	compress bool
	method   compress.Method
}

// parseCHSettings reads the URL parameters into r; an error names the parameter refused.
func parseCHSettings(v url.Values, r *chRequest) error {
	for name, vals := range v {
		val := ""
		if len(vals) > 0 {
			val = vals[len(vals)-1]
		}
		if p, ok := strings.CutPrefix(name, "param_"); ok {
			if r.params == nil {
				r.params = map[string][]byte{}
			}
			r.params[p] = chtype.AppendString(nil, val)
			continue
		}
		if chSettingsIgnored[name] {
			continue
		}
		bad := func(format string, a ...any) error {
			return &chRefusal{exc: httpx.ExcBadArguments, code: "clickhouse.bad_setting",
				msg: fmt.Sprintf("setting %s: "+format, append([]any{name}, a...)...)}
		}
		switch name {
		case "max_result_rows":
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return bad("%q is not a number of rows", val)
			}
			r.maxRows = n
		case "max_execution_time":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil || f < 0 {
				return bad("%q is not a number of seconds", val)
			}
			r.maxTime = time.Duration(f * float64(time.Second))
		case "output_format_json_quote_64bit_integers":
			b, ok := parseCHBool(val)
			if !ok {
				return bad("%q is not 0 or 1", val)
			}
			r.format.quote64 = b
		case "client_protocol_version":
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return bad("%q is not a protocol revision", val)
			}
			r.format.revision = min(n, ServerRevision)
		case "use_query_cache":
			b, ok := parseCHBool(val)
			if !ok {
				return bad("%q is not 0 or 1", val)
			}
			r.noCache = !b
		case "readonly":
			if val != "1" && val != "2" {
				return &chRefusal{exc: httpx.ExcReadonly, code: "clickhouse.readonly",
					msg: fmt.Sprintf("Cannot modify 'readonly' setting in readonly mode: WaveHouse's ClickHouse interface runs every statement with readonly = 1, so readonly = %s cannot be set", val)}
			}
		case "result_overflow_mode", "timeout_overflow_mode":
			if val != "throw" {
				return &chRefusal{exc: httpx.ExcNotImplemented, code: "clickhouse.not_implemented",
					msg: fmt.Sprintf("setting %s = %s is not supported: WaveHouse's limits always throw", name, val)}
			}
		case "compress":
			b, ok := parseCHBool(val)
			if !ok {
				return bad("%q is not 0 or 1", val)
			}
			r.compress = b
		case "network_compression_method":
			m, ok := blockMethod(val)
			if !ok {
				return &chRefusal{exc: httpx.ExcUnknownCompressionMethod, code: "clickhouse.bad_setting",
					msg: fmt.Sprintf("setting network_compression_method: Unknown compression method %q: want LZ4, LZ4HC, ZSTD or NONE", val)}
			}
			r.method = m
		default:
			return &chRefusal{exc: httpx.ExcUnknownSetting, code: "clickhouse.unknown_setting",
				msg: fmt.Sprintf("Unknown setting %s: WaveHouse's ClickHouse interface honours max_result_rows, max_execution_time, output_format_json_quote_64bit_integers, use_query_cache, readonly, client_protocol_version, compress, network_compression_method and param_<name>, and ignores the client and transport settings listed in docs/clickhouse.md#reads", name)}
		}
	}
	return nil
}

func parseCHBool(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "1", "true":
		return true, true
	case "0", "false":
		return false, true
	}
	return false, false
}

// chRefusal is a statement the ClickHouse interface refuses before running anything.
type chRefusal struct {
	exc  httpx.Exception
	code string
	msg  string
}

func (e *chRefusal) Error() string { return e.msg }

// ServeClickHouse answers a statement of the ClickHouse HTTP interface that is not an INSERT,
// for tenant, whose tables live in target, under the restrictions of acc. A read runs through
// the same path as /v1/query (statement check, table confinement, limits, cache) and is
// written in the ClickHouse output format its FORMAT clause names, else req.Format, else
// TabSeparated; the connect queries of the official clients are answered without the store;
// anything else is refused with a ClickHouse-style error naming what is not supported.
func (s *Service) ServeClickHouse(w http.ResponseWriter, ctx context.Context, tenant string, target store.Target, acc Access, req ClickHouseRead) {
	resp := &chResponder{queryID: req.QueryID, jsonErrors: req.JSONErrors}
	if resp.queryID == "" {
		resp.queryID = newQueryID()
	}
	sql, name := sqlscan.SplitFormat(req.SQL)
	if name == "" {
		name = req.Format
	}
	if name == "" {
		name = defaultCHFormat
	}
	kind, ok := chFormatNames[name]
	if !ok {
		resp.writeError(w, &chRefusal{exc: httpx.ExcUnknownFormat, code: "clickhouse.unknown_format",
			msg: fmt.Sprintf("Unknown output format %s: WaveHouse's ClickHouse interface writes %s", name, chFormatList())})
		return
	}
	cr := chRequest{format: chFormat{kind: kind, quote64: true}, method: compress.LZ4}
	if err := parseCHSettings(req.Settings, &cr); err != nil {
		resp.writeError(w, err)
		return
	}
	if cr.compress {
		bw := newBlockWriter(w, cr.method)
		defer bw.close()
		w = bw
	}
	if err := refuseStatement(sql); err != nil {
		resp.writeError(w, err)
		return
	}
	f := Format(cr.format.String())
	if names, ok := sqlscan.SelectCalls(sql); ok {
		if cols, row, ok := serverCalls(names); ok {
			s.writeLocal(w, resp, f, cols, row)
			return
		}
	}
	r := Request{SQL: sql, Format: f, Params: cr.params, MaxRows: cr.maxRows, NoCache: cr.noCache}
	acc.Apply(&r)
	if d := cr.maxTime; d > 0 && (r.MaxExecutionTime == 0 || d < r.MaxExecutionTime) {
		r.MaxExecutionTime = d
	}
	if err := describeRequest(&r, sql, target.Database, acc); err != nil {
		resp.writeError(w, err)
		return
	}
	s.serve(w, ctx, tenant, target, r, s.sqlInfo(sql), nil, resp)
}

// refuseStatement refuses what is not a read, naming the statement.
func refuseStatement(sql string) error {
	if strings.TrimSpace(sql) == "" {
		return &chRefusal{exc: httpx.ExcSyntaxError, code: "clickhouse.syntax_error", msg: "Empty query"}
	}
	kw := sqlscan.LeadingKeyword(sql)
	switch {
	case kw == "INSERT":
		return &chRefusal{exc: httpx.ExcNotImplemented, code: "clickhouse.not_implemented",
			msg: "this INSERT is not supported by WaveHouse's ClickHouse interface: only INSERT INTO [db.]table [(columns)] [SETTINGS …] FORMAT <format> with the data in the body is (INSERT … SELECT and INSERT … VALUES are not)"}
	case sqlscan.IsWriteKeyword(kw):
		return &chRefusal{exc: httpx.ExcReadonly, code: "clickhouse.readonly",
			msg: fmt.Sprintf("Cannot execute query in readonly mode: %s is not supported by WaveHouse's ClickHouse interface, which runs reads (SELECT, WITH, SHOW, DESCRIBE, EXISTS, EXPLAIN) and INSERT … FORMAT", kw)}
	}
	return nil
}

// serverCalls answers a SELECT of server functions the gateway stands in for (what clients
// ask on connect): displayName(), version(), revision(), timezone(), serverTimezone().
func serverCalls(names []string) ([]store.ResultColumn, []byte, bool) {
	str, _ := chtype.Parse("String")
	u32, _ := chtype.Parse("UInt32")
	row := []byte{'['}
	var cols []store.ResultColumn
	for i, n := range names {
		var t *chtype.Type
		var v []byte
		switch n {
		case "displayName", "hostName":
			t, v = str, chtype.AppendString(nil, ServerDisplayName)
		case "version":
			t, v = str, chtype.AppendString(nil, ServerVersion)
		case "revision":
			t, v = u32, strconv.AppendUint(nil, ServerRevision, 10)
		case "timezone", "timeZone", "serverTimezone", "serverTimeZone":
			t, v = str, chtype.AppendString(nil, ServerTimezone)
		default:
			return nil, nil, false
		}
		if i > 0 {
			row = append(row, ',')
		}
		row = append(row, v...)
		cols = append(cols, store.ResultColumn{Name: n + "()", TypeName: t.Name, Type: t})
	}
	return cols, append(row, ']'), true
}

// writeLocal answers one row the gateway computed itself.
func (s *Service) writeLocal(w http.ResponseWriter, resp *chResponder, f Format, cols []store.ResultColumn, row []byte) {
	var buf bytes.Buffer
	enc := newEncoder(f, &buf, cols)
	err := enc.begin()
	if err == nil {
		err = enc.row(row)
	}
	if err == nil {
		err = enc.end(store.Stats{Rows: 1}, nil)
	}
	if err != nil {
		resp.writeError(w, err)
		return
	}
	s.writeBody(w, f, s.hdr.bypass, buf.Bytes(), resp, &store.Stats{Rows: 1})
}

// chResponder answers in the ClickHouse HTTP interface's form.
type chResponder struct {
	queryID string
	// jsonErrors answers errors found before the status line as the gateway's JSON
	// (ClickHouseRead.JSONErrors).
	jsonErrors bool
}

func (c *chResponder) header(h http.Header, f Format, st *store.Stats) {
	h.Set("Content-Type", f.ContentType())
	if cf, ok := parseChFormat(f); ok {
		h.Set("X-ClickHouse-Format", chFormatInfos[cf.kind].name)
	}
	h.Set("X-ClickHouse-Query-Id", c.queryID)
	h.Set("X-ClickHouse-Timezone", ServerTimezone)
	h.Set("X-ClickHouse-Server-Display-Name", ServerDisplayName)
	var s store.Stats
	if st != nil {
		s = *st
	}
	h.Set("X-ClickHouse-Summary", summary(s))
}

// summary is X-ClickHouse-Summary: ClickHouse's progress counters, numbers as JSON strings.
func summary(st store.Stats) string {
	b := []byte(`{"read_rows":"`)
	b = strconv.AppendUint(b, st.RowsRead, 10)
	b = append(b, `","read_bytes":"`...)
	b = strconv.AppendUint(b, st.BytesRead, 10)
	b = append(b, `","written_rows":"0","written_bytes":"0","total_rows_to_read":"`...)
	b = strconv.AppendUint(b, st.RowsRead, 10)
	b = append(b, `","result_rows":"`...)
	b = strconv.AppendUint(b, st.Rows, 10)
	b = append(b, `","result_bytes":"0","elapsed_ns":"`...)
	b = strconv.AppendInt(b, st.Elapsed.Nanoseconds(), 10)
	return string(append(b, `"}`...))
}

func (c *chResponder) writeError(w http.ResponseWriter, err error) {
	e, exc := chException(err)
	w.Header().Set("X-ClickHouse-Query-Id", c.queryID)
	httpx.WriteClickHouseAnswer(w, c.jsonErrors, e, exc)
}

// chException is the gateway error and the ClickHouse error a ClickHouse client is shown for
// err: the refusal's own, the engine's code when the engine reported one, the limit that was
// exceeded, else the mapping of the gateway code (httpx.ExceptionFor).
func chException(err error) (httpx.Error, httpx.Exception) {
	var ref *chRefusal
	if errors.As(err, &ref) {
		status := http.StatusBadRequest
		if ref.exc == httpx.ExcReadonly {
			status = http.StatusForbidden
		}
		if ref.exc == httpx.ExcNotImplemented {
			status = http.StatusNotImplemented
		}
		return httpx.Error{Status: status, Code: ref.code, Message: ref.msg}, ref.exc
	}
	e := httpError(err)
	var le *LimitError
	if errors.As(err, &le) {
		switch le.Limit {
		case "max_execution_time":
			return e, httpx.ExcTimeoutExceeded
		case "max_result_bytes":
			return e, httpx.ExcTooManyBytes
		}
		return e, httpx.ExcTooManyRows
	}
	var ex *store.Exception
	if errors.As(err, &ex) && ex.Code > 0 && !store.IsTransient(err) {
		if exc, ok := httpx.ExceptionByNumber(int(ex.Code)); ok {
			return e, exc
		}
		// A code the gateway does not name: the engine's number, and its name when the
		// engine's text ends with it ("… (FUNCTION_THROW_IF_VALUE_IS_NON_ZERO)").
		exc := httpx.Exception{Code: int(ex.Code), Name: "UNKNOWN_EXCEPTION"}
		if m := exceptionName.FindAllStringSubmatch(ex.Message, -1); m != nil {
			exc.Name = m[len(m)-1][1]
		}
		e.Message = strings.TrimSuffix(strings.TrimRight(e.Message, "\n. "), " ("+exc.Name+")")
		return e, exc
	}
	return e, httpx.Exception{}
}

// exceptionName is the error name in an engine's exception text.
var exceptionName = regexp.MustCompile(`\(([A-Z][A-Z0-9_]+)\)`)

// appendCHException appends the ClickHouse error text of err (for an error found after the
// status line was sent).
func appendCHException(dst []byte, err error) []byte {
	e, exc := chException(err)
	if exc.Code == 0 {
		exc = httpx.ExceptionFor(e.Code)
	}
	return httpx.AppendClickHouseException(dst, exc, e.Message)
}

// newQueryID returns a random UUID (version 4), as ClickHouse generates query ids.
func newQueryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
