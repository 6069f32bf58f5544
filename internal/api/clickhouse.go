package api

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/chsql"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/ingest/request"
	"github.com/wavehouse/wavehouse/internal/query"
)

// The ClickHouse HTTP interface (docs/clickhouse.md): GET and POST / take a statement as
// ClickHouse's HTTP interface does, in ?query=, in the body, or the query parameter followed by
// the body. An INSERT … FORMAT f goes through the same steps as /v1/ingest (clickhouseInsert);
// every other statement goes to clickhouseRead.

// The ClickHouse interface's response headers.
const (
	clickHouseQueryIDHeader = "X-ClickHouse-Query-Id"
	clickHouseSummaryHeader = "X-ClickHouse-Summary"
	// committedHeader says, on an INSERT that asked to wait for its insert, whether the rows
	// reached ClickHouse within ingest.wait_timeout.
	committedHeader = "X-Wavehouse-Committed"
)

// clickHouseParams are the URL parameters of ClickHouse's HTTP interface that are not settings.
var clickHouseParams = map[string]bool{
	"query": true, "database": true, "query_id": true, "default_format": true, "decompress": true,
	"compress": true, "wait": true, "session_id": true, "session_timeout": true, "session_check": true,
	"buffer_size": true, "wait_end_of_query": true, "client_protocol_version": true, "user": true,
	"password": true, "quota_key": true,
}

// clickhouseStatement is one request's statement as ClickHouse's HTTP interface assembles it.
type clickhouseStatement struct {
	// sql is the statement text; for an INSERT whose data is the whole body, only its head.
	sql string
	// ins is the parsed INSERT, valid when insert is set.
	ins    chsql.Insert
	insert bool
	// data is the INSERT's data and encoding its Content-Encoding ("" once decoded).
	data     []byte
	encoding string
	// raw is the body as read (request.ReadRaw), released when the handler ends.
	raw      []byte
	queryID  string
	settings url.Values
}

// clickhousePing serves GET /ping, ClickHouse's liveness answer, without a credential.
func (a *API) clickhousePing(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	_, _ = w.Write([]byte("Ok.\n"))
}

// clickhouse serves GET and POST /.
func (a *API) clickhouse(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	q := r.URL.Query()
	queryID := q.Get("query_id")
	if queryID == "" {
		queryID = newQueryID()
	}
	w.Header().Set(clickHouseQueryIDHeader, queryID)
	if r.Method == http.MethodGet && !q.Has("query") {
		// ClickHouse answers a bare GET / like /ping.
		a.clickhousePing(w, r)
		return
	}
	st, herr := a.clickhouseAssemble(r, q)
	defer request.ReleaseRaw(st.raw) // nothing outlives the handler: the rows are queued by then
	if herr != nil {
		a.metrics.observeIngest(outcomeRejected, start)
		writeCH(w, r, *herr)
		return
	}
	st.queryID = queryID
	st.settings = clickhouseSettings(q, st.ins.Settings)
	if !st.insert {
		a.clickhouseRead(w, r, st)
		return
	}
	if r.Method != http.MethodPost {
		writeCH(w, r, httpx.Error{Status: http.StatusBadRequest, Code: "clickhouse.readonly",
			Message: "an INSERT must be sent with POST (GET requests are read-only, as in ClickHouse)"})
		return
	}
	a.clickhouseInsert(w, r, st, start)
}

// clickhouseAssemble reads the statement: ClickHouse joins the query parameter and the body
// with a line break. When the query parameter holds a whole INSERT head, the body is its data
// as sent (still compressed: it is read once, like /v1/ingest's); otherwise the body is
// decompressed and the statement read from the joined text. With ?decompress=1 the body (after
// its Content-Encoding) is ClickHouse's compressed blocks, which are decompressed here in both
// cases (clickhouse-go over HTTP with LZ4 or ZSTD compression).
func (a *API) clickhouseAssemble(r *http.Request, q url.Values) (clickhouseStatement, *httpx.Error) {
	raw, herr := request.ReadRaw(r.Body, r.ContentLength, a.cfg.Limits)
	if herr != nil {
		return clickhouseStatement{}, herr
	}
	st, herr := a.clickhouseSplit(r, q, raw)
	st.raw = raw
	return st, herr
}

// clickhouseSplit is clickhouseAssemble once the body is read.
func (a *API) clickhouseSplit(r *http.Request, q url.Values, raw []byte) (clickhouseStatement, *httpx.Error) {
	param := q.Get("query")
	enc := r.Header.Get("Content-Encoding")
	blocks := truthy(q.Get("decompress"))
	if param != "" && chsql.IsInsert(param) {
		ins, err := chsql.ParseInsert(param)
		if err == nil && strings.TrimSpace(param[ins.Data:]) == "" {
			if !blocks {
				return clickhouseStatement{sql: param[:ins.Data], ins: ins, insert: true, data: raw, encoding: enc}, nil
			}
			data, herr := a.clickhouseBody(enc, raw, true)
			if herr != nil {
				return clickhouseStatement{}, herr
			}
			return clickhouseStatement{sql: param[:ins.Data], ins: ins, insert: true, data: data}, nil
		}
		if err != nil && !errors.Is(err, chsql.ErrIncomplete) {
			return clickhouseStatement{}, statementErr(err)
		}
	}
	body, herr := a.clickhouseBody(enc, raw, blocks)
	if herr != nil {
		return clickhouseStatement{}, herr
	}
	text := string(body)
	if param != "" {
		text = param + "\n" + text
	}
	if strings.TrimSpace(text) == "" {
		return clickhouseStatement{}, &httpx.Error{Status: http.StatusBadRequest, Code: "clickhouse.syntax_error", Message: "Empty query: send the statement in ?query= or in the body"}
	}
	if !chsql.IsInsert(text) {
		return clickhouseStatement{sql: text}, nil
	}
	ins, err := chsql.ParseInsert(text)
	if err != nil {
		return clickhouseStatement{}, statementErr(err)
	}
	// The data is usually all in the body: slice it out rather than copy it.
	var data []byte
	if off := len(text) - len(body); ins.Data >= off {
		data = body[ins.Data-off:]
	} else {
		data = []byte(text[ins.Data:])
	}
	return clickhouseStatement{sql: text[:ins.Data], ins: ins, insert: true, data: data}, nil
}

// clickhouseBody is raw, sent with Content-Encoding enc, decoded; with blocks (?decompress=1),
// then read as ClickHouse's compressed blocks. Both steps bound the result by max_body_bytes.
func (a *API) clickhouseBody(enc string, raw []byte, blocks bool) ([]byte, *httpx.Error) {
	body, herr := request.Decode(enc, raw, a.cfg.Limits)
	if herr != nil || !blocks {
		return body, herr
	}
	return request.DecodeBlocks(body, a.cfg.Limits)
}

// statementErr answers an INSERT that chsql cannot read or the gateway does not serve.
func statementErr(err error) *httpx.Error {
	var ue *chsql.UnsupportedError
	switch {
	case errors.As(err, &ue) && ue.What == "VALUES":
		return &httpx.Error{Status: http.StatusNotImplemented, Code: "clickhouse.not_implemented",
			Message: "INSERT … VALUES is not supported; send the rows in one of the formats " + strings.Join(insertFormats(), ", ") + " (INSERT INTO t FORMAT JSONEachRow, then the rows)"}
	case ue != nil:
		return &httpx.Error{Status: http.StatusNotImplemented, Code: "clickhouse.not_implemented", Message: ue.What + " is not supported; only INSERT INTO [db.]table [(columns)] [SETTINGS …] FORMAT name with the rows as data"}
	case errors.Is(err, chsql.ErrIncomplete):
		return &httpx.Error{Status: http.StatusBadRequest, Code: "clickhouse.syntax_error", Message: "the INSERT ends before its FORMAT clause: want INSERT INTO [db.]table [(columns)] [SETTINGS …] FORMAT name"}
	}
	return &httpx.Error{Status: http.StatusBadRequest, Code: "clickhouse.syntax_error", Message: "cannot read the INSERT: " + strings.TrimPrefix(err.Error(), "chsql: ")}
}

// clickhouseSettings are the request's settings: the URL parameters that are not the
// interface's own, then the statement's SETTINGS clause, which wins.
func clickhouseSettings(q url.Values, clause []chsql.Setting) url.Values {
	out := url.Values{}
	for k, v := range q {
		if !clickHouseParams[k] && !strings.HasPrefix(k, "param_") && len(v) > 0 {
			out.Set(k, v[len(v)-1])
		}
	}
	for _, s := range clause {
		out.Set(s.Name, s.Value)
	}
	return out
}

// clickhouseRead serves every statement that is not an INSERT, for a key with the query scope.
// The query service's ClickHouse interface serves them, under the same admission as /v1/query.
func (a *API) clickhouseRead(w http.ResponseWriter, r *http.Request, st clickhouseStatement) {
	p, _ := auth.FromContext(r.Context())
	if e := auth.Check(p, auth.ScopeQuery, ""); e != nil {
		writeCH(w, r, *e)
		return
	}
	tenant, target, release, herr := a.admitRead(w, r)
	if herr != nil {
		writeCH(w, r, *herr)
		return
	}
	defer release()
	q := r.URL.Query()
	a.deps.Query.ServeClickHouse(w, r.Context(), tenant, target, a.access(r.Context(), p, target, queryConfined(p)),
		query.ClickHouseRead{SQL: st.sql, Format: q.Get("default_format"), Settings: q, QueryID: st.queryID, JSONErrors: httpx.WantsJSONErrors(r)})
}

// writeCH answers an error of the ClickHouse interface in the form the request asks for.
func writeCH(w http.ResponseWriter, r *http.Request, e httpx.Error) {
	httpx.WriteClickHouseForm(w, r, clickhouseMessage(e))
}

// newQueryID is a random UUID (version 4), ClickHouse's form of a query id.
func newQueryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
