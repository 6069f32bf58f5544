package api

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/ingest/payload"
)

// chPost sends body to the ClickHouse interface with the statement in ?query= (when query is
// not empty) and the key as the Basic password, as the official clients send it.
func (f *fixture) chPost(t *testing.T, key, query, body string, header ...string) response {
	t.Helper()
	path := "/"
	if query != "" {
		path += "?query=" + url.QueryEscape(query)
	}
	h := map[string]string{}
	if key != "" {
		h["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte("default:"+key))
	}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	return f.do(t, call{method: http.MethodPost, path: path, body: body, header: h})
}

// queuedRows settles the queue and returns every queued row as "columns=canonical row".
func (f *fixture) queuedRows(t *testing.T) []string {
	t.Helper()
	var rows []string
	for _, rec := range f.settleQueued(t, nil) {
		segs, err := payload.Decode(rec.Payload)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range segs {
			canon, err := s.CanonicalRows()
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range canon {
				rows = append(rows, strings.Join(s.Columns, ",")+"="+string(row))
			}
		}
	}
	return rows
}

// wantCHError checks a ClickHouse-form error: status, body "Code: N. DB::Exception: …", the
// exception and gateway code headers, and that the body mentions each of want.
func wantCHError(t *testing.T, r response, status, exc int, code string, want ...string) {
	t.Helper()
	body := string(r.body)
	prefix := "Code: " + itoa(exc) + ". DB::Exception: "
	if r.status != status || !strings.HasPrefix(body, prefix) || r.header.Get(httpx.ExceptionHeader) != itoa(exc) || r.header.Get(httpx.GatewayCodeHeader) != code {
		t.Fatalf("got %d %v %q, want %d %s (Code: %d)", r.status, r.header, body, status, code, exc)
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("body %q does not mention %q", body, w)
		}
	}
	if !documentedCodes(t)[code] {
		t.Errorf("code %s is answered but not documented in docs/*.md", code)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// rowBinary encodes rows of (ts DateTime, user String) as RowBinary.
func rowBinary(rows ...[2]any) []byte {
	var b []byte
	for _, r := range rows {
		b = binary.LittleEndian.AppendUint32(b, uint32(r[0].(int)))
		s := r[1].(string)
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// nativeBlock encodes rows of (ts DateTime, user String) as one Native block (revision 0).
func nativeBlock(rows ...[2]any) []byte {
	str := func(b []byte, s string) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	b := binary.AppendUvarint(nil, 2)
	b = binary.AppendUvarint(b, uint64(len(rows)))
	b = str(str(b, "ts"), "DateTime")
	for _, r := range rows {
		b = binary.LittleEndian.AppendUint32(b, uint32(r[0].(int)))
	}
	b = str(str(b, "user"), "String")
	for _, r := range rows {
		b = str(b, r[1].(string))
	}
	return b
}

// formatCase is one input format and a body of it holding two rows of (ts, user).
type formatCase struct{ format, body string }

// columns is the column list the INSERT names: none when the body names its columns.
func (c formatCase) columns() string {
	if strings.Contains(c.format, "Names") || c.format == "JSONEachRow" || c.format == "Native" {
		return ""
	}
	return " (ts, user)"
}

// everyFormat is a body of every input format with the rows 2026-01-01 00:00:00/a and
// 2026-01-01 00:00:01/b.
func everyFormat() []formatCase {
	return []formatCase{
		{"JSONEachRow", `{"ts":"2026-01-01 00:00:00","user":"a"}` + "\n" + `{"ts":"2026-01-01 00:00:01","user":"b"}` + "\n"},
		{"JSONCompactEachRow", `["2026-01-01 00:00:00","a"]` + "\n" + `["2026-01-01 00:00:01","b"]`},
		{"JSONCompactEachRowWithNames", `["ts","user"]` + "\n" + `["2026-01-01 00:00:00","a"]` + "\n" + `["2026-01-01 00:00:01","b"]`},
		{"JSONCompactEachRowWithNamesAndTypes", `["user","ts"]` + "\n" + `["String","DateTime"]` + "\n" + `["a","2026-01-01 00:00:00"]` + "\n" + `["b","2026-01-01 00:00:01"]`},
		{"CSV", "2026-01-01 00:00:00,a\n\"2026-01-01 00:00:01\",\"b\"\n"},
		{"CSVWithNames", "user,ts\na,2026-01-01 00:00:00\nb,2026-01-01 00:00:01\n"},
		{"TabSeparated", "2026-01-01 00:00:00\ta\n2026-01-01 00:00:01\tb\n"},
		{"TSV", "2026-01-01 00:00:00\ta\n2026-01-01 00:00:01\tb\n"},
		{"TSVWithNames", "ts\tuser\n2026-01-01 00:00:00\ta\n2026-01-01 00:00:01\tb\n"},
		{"TabSeparatedWithNames", "ts\tuser\n2026-01-01 00:00:00\ta\n2026-01-01 00:00:01\tb\n"},
		{"RowBinary", string(rowBinary([2]any{1767225600, "a"}, [2]any{1767225601, "b"}))},
		{"Native", string(nativeBlock([2]any{1767225600, "a"}, [2]any{1767225601, "b"}))},
	}
}

// TestClickHouseInsertEveryFormat: each input format lands its rows once, in the queue, as the
// same canonical rows, answered 200 with an empty body, X-ClickHouse-Summary counting them and a
// query id.
func TestClickHouseInsertEveryFormat(t *testing.T) {
	f := newFixture(t, options{})
	const want0, want1 = `["2026-01-01 00:00:00","a"]`, `["2026-01-01 00:00:01","b"]`
	for _, tc := range everyFormat() {
		t.Run(tc.format, func(t *testing.T) {
			cols := tc.columns()
			r := f.chPost(t, f.all, "INSERT INTO events"+cols+" FORMAT "+tc.format, tc.body, "Accept", "*/*")
			if r.status != http.StatusOK || len(r.body) != 0 || r.header.Get(clickHouseQueryIDHeader) == "" {
				t.Fatalf("got %d %v %q, want 200 with an empty body", r.status, r.header, r.body)
			}
			var sum map[string]string
			if err := json.Unmarshal([]byte(r.header.Get(clickHouseSummaryHeader)), &sum); err != nil || sum["written_rows"] != "2" || sum["read_rows"] != "2" || sum["elapsed_ns"] == "" {
				t.Fatalf("summary %q: %v", r.header.Get(clickHouseSummaryHeader), err)
			}
			if got := f.queuedRows(t); !slices.Equal(got, []string{"ts,user,note=" + want0[:len(want0)-1] + ",null]", "ts,user,note=" + want1[:len(want1)-1] + ",null]"}) {
				t.Fatalf("queued %q", got)
			}
		})
	}
}

// TestClickHouseStatementForms: the statement in the body (the Node client's query form, and
// with data after it), the query parameter joined with a body that holds the rest, db.table
// and ?database= naming the tenant's own database or default, quoted names, a column list
// ordering CSV fields, and compressed bodies.
func TestClickHouseStatementForms(t *testing.T) {
	f := newFixture(t, options{})
	gz := func(s string) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write([]byte(s))
		_ = w.Close()
		return b.String()
	}
	zs := func(s string) string {
		e, _ := zstd.NewWriter(nil)
		return string(e.EncodeAll([]byte(s), nil))
	}
	lz := func(s string) string {
		var b bytes.Buffer
		w := lz4.NewWriter(&b)
		_, _ = w.Write([]byte(s))
		_ = w.Close()
		return b.String()
	}
	row := `{"ts":"2026-01-01 00:00:00","user":"a"}`
	for name, c := range map[string]struct {
		query, body string
		header      []string
	}{
		"query in body":            {"", "INSERT INTO events FORMAT JSONEachRow\n" + row, nil},
		"query in body, comment":   {"", "/* c */ insert into `events` format JSONEachRow " + row, nil},
		"param then body":          {"INSERT INTO events", "FORMAT JSONEachRow\n" + row, nil},
		"data in the param":        {"INSERT INTO events FORMAT JSONEachRow " + row, "", nil},
		"db.table":                 {"INSERT INTO " + f.db + ".events FORMAT JSONEachRow", row, nil},
		"default.table":            {"INSERT INTO default.events FORMAT JSONEachRow", row, nil},
		"column list orders CSV":   {`INSERT INTO "events" (user, ts) FORMAT CSV`, "a,2026-01-01 00:00:00\n", nil},
		"gzip":                     {"INSERT INTO events FORMAT JSONEachRow", gz(row), []string{"Content-Encoding", "gzip"}},
		"zstd":                     {"INSERT INTO events FORMAT JSONEachRow", zs(row), []string{"Content-Encoding", "zstd"}},
		"lz4":                      {"INSERT INTO events FORMAT JSONEachRow", lz(row), []string{"Content-Encoding", "lz4"}},
		"gzip, statement in body":  {"", gz("INSERT INTO events FORMAT JSONEachRow\n" + row), []string{"Content-Encoding", "gzip"}},
		"SETTINGS clause, ignored": {"INSERT INTO events SETTINGS insert_quorum=2 FORMAT JSONEachRow", row, nil},
	} {
		t.Run(name, func(t *testing.T) {
			r := f.chPost(t, f.all, c.query, c.body, c.header...)
			if r.status != http.StatusOK {
				t.Fatalf("got %d %q", r.status, r.body)
			}
			if got := f.queuedRows(t); len(got) != 1 || !strings.Contains(got[0], `"2026-01-01 00:00:00","a"`) {
				t.Fatalf("queued %q", got)
			}
		})
	}
	r := f.do(t, call{method: http.MethodPost, path: "/?database=" + f.db + "&query=" + url.QueryEscape("INSERT INTO events FORMAT JSONEachRow"), key: f.all, body: row})
	if r.status != http.StatusOK || len(f.queuedRows(t)) != 1 {
		t.Fatalf("?database= the tenant's own: %d %s", r.status, r.body)
	}
}

// TestClickHouseCredentials: every way a ClickHouse client sends its password carries the API
// key; a wrong key is AUTHENTICATION_FAILED; /ping needs none.
func TestClickHouseCredentials(t *testing.T) {
	f := newFixture(t, options{})
	q := url.QueryEscape("INSERT INTO events FORMAT JSONEachRow")
	row := `{"ts":0,"user":"a"}`
	for name, c := range map[string]call{
		"basic":        {path: "/?query=" + q, header: map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("u1:"+f.all))}},
		"x-clickhouse": {path: "/?query=" + q, header: map[string]string{"X-ClickHouse-User": "default", "X-ClickHouse-Key": f.all}},
		"params":       {path: "/?user=u1&password=" + url.QueryEscape(f.all) + "&query=" + q},
		"bearer":       {path: "/?query=" + q, key: f.all},
	} {
		c.method, c.body = http.MethodPost, row
		if r := f.do(t, c); r.status != http.StatusOK {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	if n := len(f.queuedRows(t)); n != 4 {
		t.Fatalf("queued %d rows, want 4", n)
	}
	r := f.do(t, call{method: http.MethodPost, path: "/?query=" + q, body: row, header: map[string]string{"X-ClickHouse-Key": "wh_ffffffffffff_0123"}})
	wantCHError(t, r, http.StatusUnauthorized, 516, "auth.invalid_key", "AUTHENTICATION_FAILED")
	r = f.do(t, call{method: http.MethodPost, path: "/?query=" + q, body: row})
	wantCHError(t, r, http.StatusUnauthorized, 516, "auth.missing_key", "password")
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		if r := f.do(t, call{method: m, path: "/ping"}); r.status != http.StatusOK || m == http.MethodGet && string(r.body) != "Ok.\n" {
			t.Errorf("%s /ping: %d %q", m, r.status, r.body)
		}
	}
	if r := f.do(t, call{method: http.MethodGet, path: "/", key: f.all}); r.status != http.StatusOK || string(r.body) != "Ok.\n" {
		t.Errorf("GET /: %d %q", r.status, r.body)
	}
}

// TestClickHouseRefusals: the key's scope and table restriction, another tenant's database,
// unknown formats, VALUES, reads (until the query side is wired) and bad rows, each answered in
// ClickHouse's form with the codes documented.
func TestClickHouseRefusals(t *testing.T) {
	f := newFixture(t, options{})
	exec(t, f.store, "CREATE TABLE "+f.db+".pages (ts DateTime, user String) ENGINE = MergeTree ORDER BY ts")
	row := `{"ts":0,"user":"a"}`
	ins := "INSERT INTO events FORMAT JSONEachRow"
	wantCHError(t, f.chPost(t, f.queryOnly, ins, row), 403, 497, "auth.missing_scope", `lacks scope "ingest"`)
	wantCHError(t, f.chPost(t, f.events, "INSERT INTO pages FORMAT JSONEachRow", row), 403, 497, "auth.table_not_allowed", "pages")
	wantCHError(t, f.chPost(t, f.all, "INSERT INTO "+f.otherDB+".events FORMAT JSONEachRow", row), 403, 497, "database.not_allowed", f.otherDB)
	wantCHError(t, f.chPost(t, f.all, "INSERT INTO events FORMAT Parquet", "x"), 400, 73, "clickhouse.unknown_format", "Parquet", "JSONEachRow", "RowBinary", "Native")
	wantCHError(t, f.chPost(t, f.all, "INSERT INTO events VALUES (1, 'a')", ""), 501, 48, "clickhouse.not_implemented", "VALUES", "JSONEachRow")
	wantCHError(t, f.chPost(t, f.all, "INSERT INTO events (nope) FORMAT CSV", "1\n"), 400, 16, "ingest.invalid_columns", "nope")
	wantCHError(t, f.chPost(t, f.all, "INSERT INTO events FORMAT JSONEachRow SETTINGS", ""), 400, 27, "ingest.malformed_json")
	wantCHError(t, f.chPost(t, f.all, "INSERT INTO nope FORMAT JSONEachRow", row), 404, 60, "table.unknown", "nope")
	wantCHError(t, f.chPost(t, f.all, "INSERT INTO events SETTINGS input_format_skip_unknown_fields=1 FORMAT JSONEachRow", row), 501, 48, "clickhouse.not_implemented", "input_format_skip_unknown_fields=1")
	wantCHError(t, f.chPost(t, f.all, "", "INSERT INTO events (ts FORMAT CSV"), 400, 62, "clickhouse.syntax_error", "column list")
	if r := f.chPost(t, f.all, "SELECT 1", ""); r.status != http.StatusOK || string(r.body) != "1\n" {
		t.Fatalf("a read reaches the query side: %d %q", r.status, r.body)
	}
	wantCHError(t, f.do(t, call{method: http.MethodGet, path: "/?query=" + url.QueryEscape(ins), key: f.all}), 400, 164, "clickhouse.readonly", "POST")
	wantCHError(t, f.chPost(t, f.all, "INSERT INTO events FORMAT JSONCompactEachRowWithNamesAndTypes", `["ts"]`+"\n"+`["String"]`+"\n"+`[0]`), 400, 117, "ingest.types_mismatch", `column "ts": the body says String, the table has DateTime`)
	wantCHError(t, f.chPost(t, f.all, "INSERT INTO events FORMAT RowBinary", "\x01"), 400, 27, "ingest.malformed_binary", "at row 1")
	// A megabyte read as a Native column name is quoted as an excerpt, not echoed whole.
	huge := "\x01\x01\x80\x80\x40" + strings.Repeat("x", 1<<20) + "\x06String"
	if r := f.chPost(t, f.all, "INSERT INTO events FORMAT Native", huge); r.status != http.StatusBadRequest || len(r.body) > 2048 ||
		!strings.Contains(string(r.body), "xxx…") {
		t.Fatalf("a megabyte column name: %d, %d bytes: %.300q", r.status, len(r.body), r.body)
	}
	if got := f.queuedRows(t); len(got) != 0 {
		t.Fatalf("a refused request queued %q", got)
	}
}

// TestClickHouseBadRowEveryFormat: a bad row is 400 Code: 27 naming the column, a value excerpt
// and the row (counted from 1, as ClickHouse does), nothing is queued, and the gateway's JSON
// error with every row error is there for a client that asks for it.
func TestClickHouseBadRowEveryFormat(t *testing.T) {
	f := newFixture(t, options{})
	for format, body := range map[string]string{
		"JSONEachRow":        `{"ts":0,"user":"a","n":1}` + "\n" + `{"ts":0,"user":"b","n":300}`,
		"JSONCompactEachRow": `[0,"a",1,null]` + "\n" + `[0,"b",300,null]`,
		"CSV":                "0,a,1,\\N\n0,b,300,\\N\n",
		"CSVWithNames":       "ts,user,n\n0,a,1\n0,b,300\n",
		"TSV":                "0\ta\t1\t\\N\n0\tb\t300\t\\N\n",
		"TSVWithNames":       "ts\tuser\tn\n0\ta\t1\n0\tb\t300\n",
	} {
		r := f.chPost(t, f.all, "INSERT INTO events FORMAT "+format, body)
		wantCHError(t, r, 400, 27, "ingest.invalid_rows", `column "n" (UInt8)`, "300", "(at row 2", "1 of 2 rows are invalid")
		r = f.chPost(t, f.all, "INSERT INTO events FORMAT "+format, body, "Accept", "application/json")
		e := wantError(t, r, 400, "ingest.invalid_rows")
		if r.header.Get(httpx.ExceptionHeader) != "27" || !strings.Contains(string(e.Details), `"row":1`) || !strings.Contains(string(e.Details), `"column":"n"`) {
			t.Errorf("%s: JSON details %s, header %v", format, e.Details, r.header)
		}
	}
	if got := f.queuedRows(t); len(got) != 0 {
		t.Fatalf("queued %q", got)
	}
}

// TestClickHouseIdempotency: an Idempotency-Key, or ClickHouse's insert_deduplication_token,
// makes a retried INSERT land once; the retry is answered 200 as a replay, with the original's
// X-ClickHouse-Summary and sequence.
func TestClickHouseIdempotency(t *testing.T) {
	f := newFixture(t, options{})
	row := `{"ts":0,"user":"a"}`
	for _, c := range []struct{ query, key string }{
		{"INSERT INTO events FORMAT JSONEachRow", "k1"},
		{"INSERT INTO events SETTINGS insert_deduplication_token='tok1' FORMAT JSONEachRow", ""},
	} {
		var h []string
		if c.key != "" {
			h = []string{IdempotencyHeader, c.key}
		}
		first := f.chPost(t, f.all, c.query, row, h...)
		again := f.chPost(t, f.all, c.query, row, h...)
		if first.status != 200 || again.status != 200 || again.header.Get(ReplayedHeader) != "true" {
			t.Fatalf("%s: first %d %v, again %d %v", c.query, first.status, first.header, again.status, again.header)
		}
		for _, h := range []string{clickHouseSummaryHeader, "X-Wavehouse-Sequence"} {
			if got, want := again.header.Get(h), first.header.Get(h); got != want || want == "" {
				t.Errorf("%s: the replay's %s %q, want the original's %q", c.query, h, got, want)
			}
		}
		var sum map[string]string
		if err := json.Unmarshal([]byte(again.header.Get(clickHouseSummaryHeader)), &sum); err != nil || sum["written_rows"] != "1" {
			t.Errorf("%s: the replay's summary %q, want written_rows 1", c.query, again.header.Get(clickHouseSummaryHeader))
		}
		if len(again.body) != 0 {
			t.Errorf("%s: the replay's body %q, want ClickHouse's empty one", c.query, again.body)
		}
		if n := len(f.queuedRows(t)); n != 1 {
			t.Fatalf("%s: queued %d rows, want 1", c.query, n)
		}
	}
	r := f.chPost(t, f.all, "INSERT INTO events FORMAT JSONEachRow", `{"ts":1,"user":"b"}`, IdempotencyHeader, "k1")
	wantCHError(t, r, 422, 36, "idempotency.key_reused")
}

// TestClickHouseWait: ?wait=committed and async_insert=1 wait for the insert: 200 with
// X-Wavehouse-Committed true once the ingest role settled the record.
func TestClickHouseWait(t *testing.T) {
	f := newFixture(t, options{})
	// The record is settled (as the ingest role would) while the request waits.
	for _, q := range []string{"/?wait=committed&query=", "/?async_insert=1&query="} {
		res := make(chan response, 1)
		go func() {
			res <- f.do(t, call{method: http.MethodPost, path: q + url.QueryEscape("INSERT INTO events FORMAT JSONEachRow"), key: f.all, body: `{"ts":0,"user":"b"}`})
		}()
		var r response
		for r.status == 0 {
			f.settleQueued(t, nil)
			select {
			case r = <-res:
			default:
			}
		}
		if r.status != 200 || r.header.Get(committedHeader) != "true" {
			t.Fatalf("%s: %d %v %s", q, r.status, r.header, r.body)
		}
	}
}

// TestClickHouseBinaryEnumValue: a Native or RowBinary value an Enum column does not name is
// refused as the text formats refuse a bad row (400 ingest.invalid_rows, Code 27), naming the
// row (from 1), the column and the value, not as malformed data; nothing is queued.
func TestClickHouseBinaryEnumValue(t *testing.T) {
	f := newFixture(t, options{})
	exec(t, f.store, "CREATE TABLE "+f.db+".moods (id UInt8, mood Enum8('sad' = 1, 'ok' = 2)) ENGINE = MergeTree ORDER BY id")
	str := func(b []byte, s string) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	native := binary.AppendUvarint(nil, 2)
	native = binary.AppendUvarint(native, 2)
	native = append(str(str(native, "id"), "UInt8"), 1, 2)
	native = append(str(str(native, "mood"), "Enum8('sad' = 1, 'ok' = 2)"), 2, 7)
	for _, c := range []struct{ format, body string }{
		{"Native", string(native)},
		{"RowBinary", string([]byte{1, 2, 2, 7})},
	} {
		q := "INSERT INTO moods FORMAT " + c.format
		wantCHError(t, f.chPost(t, f.all, q, c.body), 400, 27, "ingest.invalid_rows", `column "mood"`, "7 is not a value of Enum8('sad' = 1, 'ok' = 2)", "at row 2")
		r := f.chPost(t, f.all, q, c.body, "Accept", "application/json")
		var e struct {
			Code    string `json:"code"`
			Details struct {
				Errors []struct {
					Row          int
					Column, Code string
					Message      string
				} `json:"errors"`
			} `json:"details"`
		}
		if err := json.Unmarshal(r.body, &e); err != nil || e.Code != "ingest.invalid_rows" || len(e.Details.Errors) != 1 ||
			e.Details.Errors[0].Row != 1 || e.Details.Errors[0].Column != "mood" || e.Details.Errors[0].Code != "invalid_value" ||
			!strings.Contains(e.Details.Errors[0].Message, "7 is not a value") {
			t.Errorf("%s with Accept: application/json: %d %s, want ingest.invalid_rows with the row error at row 1, column mood, invalid_value", c.format, r.status, r.body)
		}
		if strings.Contains(string(r.body), "malformed") {
			t.Errorf("%s: %s calls the value malformed", c.format, r.body)
		}
	}
	if got := f.queuedRows(t); len(got) != 0 {
		t.Fatalf("queued %q", got)
	}
}
