package chclients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// nodeError is what a script reports of the error the client threw.
type nodeError struct {
	Class   string  `json:"class"`
	Message string  `json:"message"`
	Code    *string `json:"code"` // ClickHouseError.code: the server's error code, as a string
	Type    *string `json:"type"` // ClickHouseError.type: the error's name, when the server sent one
}

func (e *nodeError) String() string {
	code := "<none>"
	if e.Code != nil {
		code = *e.Code
	}
	return fmt.Sprintf("%s (code %s): %s", e.Class, code, e.Message)
}

// nodeResult is the one JSON line a script prints.
type nodeResult struct {
	Result json.RawMessage `json:"result"`
	Error  *nodeError      `json:"error"`
}

// node runs one script of node/ with the official client pointed at tg, stdin as its input and
// env as extra variables, and returns what it printed. A script that cannot run fails the test.
func (tg target) node(t testing.TB, script string, stdin []byte, env ...string) nodeResult {
	t.Helper()
	nc := testsvc.ClickHouseNodeClient(t)
	cmd := exec.CommandContext(t.Context(), nc.Node, filepath.Join("node", script))
	cmd.Env = append(cmd.Environ(), nc.Env(),
		"CH_URL="+tg.url, "CH_USER="+tg.user, "CH_PASSWORD="+tg.password, "CH_DATABASE="+tg.database)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", script, err, out, stderr.String())
	}
	var r nodeResult
	if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
		t.Fatalf("node %s printed %q (stderr %q): %v", script, out, stderr.String(), err)
	}
	return r
}

// mustNode is node requiring the call to succeed; it decodes the result into v.
func (tg target) mustNode(t testing.TB, script string, stdin []byte, v any, env ...string) {
	t.Helper()
	r := tg.node(t, script, stdin, env...)
	if r.Error != nil {
		t.Fatalf("%s: %s against %s: %s", tg.name, script, tg.url, r.Error)
	}
	if v != nil {
		if err := json.Unmarshal(r.Result, v); err != nil {
			t.Fatalf("%s result %s: %v", script, r.Result, err)
		}
	}
}

// eventsCols is the table every Node test writes: a string key, a number, an enum and a
// nullable string, so that CSV and JSON rows exercise more than one type.
const eventsCols = "id String, n UInt32, level Enum8('info' = 1, 'warn' = 2), note Nullable(String)"

// TestNodeClient runs @clickhouse/client against ClickHouse itself (the reference: the
// scripts and what the tests expect of them hold there) and against the gateway.
func TestNodeClient(t *testing.T) {
	t.Parallel()
	t.Run("clickhouse", func(t *testing.T) { nodeSuite(t, clickhouseTarget(t)) })
	t.Run("gateway", func(t *testing.T) { nodeSuite(t, gatewayTarget(t)) })
}

func nodeSuite(t *testing.T, tg target) {
	t.Run("ping", func(t *testing.T) {
		var r struct {
			Success bool   `json:"success"`
			Error   string `json:"error"`
		}
		tg.mustNode(t, "ping.mjs", nil, &r)
		if !r.Success {
			t.Fatalf("ping: success false: %s", r.Error)
		}
	})

	t.Run("insert JSONEachRow and query JSON", func(t *testing.T) {
		const table = "json_rows"
		tg.createTable(t, table, eventsCols)
		rows := `[{"id":"a","n":1,"level":"info","note":null},{"id":"b","n":2,"level":"warn","note":"x"},{"id":"c","n":3,"level":"info","note":"comma, \"quoted\""}]`
		var ins insertResult
		tg.mustNode(t, "insert_json.mjs", []byte(rows), &ins, "CH_TABLE="+table)
		ins.check(t, tg, 3)
		tg.landed(t, table, 3)
		requireQueryRows(t, tg, table, `[{"id":"a","n":1,"level":"info","note":null},{"id":"b","n":2,"level":"warn","note":"x"},{"id":"c","n":3,"level":"info","note":"comma, \"quoted\""}]`)
	})

	// compression {request: true, response: true}: the client gzips the body
	// (Content-Encoding: gzip) and asks for gzip responses (enable_http_compression=1,
	// Accept-Encoding: gzip); the gateway answers uncompressed, which the client reads.
	t.Run("insert and query with compression", func(t *testing.T) {
		const table = "gzip_rows"
		tg.createTable(t, table, eventsCols)
		rows := `[{"id":"a","n":1,"level":"info","note":null},{"id":"b","n":2,"level":"warn","note":"x"}]`
		var ins insertResult
		tg.mustNode(t, "insert_json.mjs", []byte(rows), &ins, "CH_TABLE="+table, "CH_COMPRESSION=1")
		ins.check(t, tg, 2)
		tg.landed(t, table, 2)
		requireQueryRows(t, tg, table, rows, "CH_COMPRESSION=1")
	})

	for _, as := range []string{"stream", "string"} {
		t.Run("insert CSV as "+as, func(t *testing.T) {
			table := "csv_" + as
			tg.createTable(t, table, eventsCols)
			csv := "a,1,info,\\N\nb,2,warn,x\nc,3,info,\"comma, \"\"quoted\"\"\"\n"
			var ins insertResult
			tg.mustNode(t, "insert_csv.mjs", []byte(csv), &ins, "CH_TABLE="+table, "CH_CSV_AS="+as)
			ins.check(t, tg, 3)
			tg.landed(t, table, 3)
			requireQueryRows(t, tg, table, `[{"id":"a","n":1,"level":"info","note":null},{"id":"b","n":2,"level":"warn","note":"x"},{"id":"c","n":3,"level":"info","note":"comma, \"quoted\""}]`)
		})
	}

	t.Run("bad row is a ClickHouseError naming row and column", func(t *testing.T) {
		const table = "bad_rows"
		tg.createTable(t, table, eventsCols)
		// Row 2 (1-based, as ClickHouse counts) has a number that is not a UInt32.
		rows := `[{"id":"a","n":1,"level":"info","note":null},{"id":"b","n":"many","level":"warn","note":null}]`
		r := tg.node(t, "insert_json.mjs", []byte(rows), "CH_TABLE="+table)
		if r.Error == nil {
			t.Fatalf("the bad row was accepted: %s", r.Result)
		}
		e := r.Error
		t.Logf("%s: the client threw %s", tg.name, e)
		if tg.gw == nil {
			// ClickHouse 18.16 writes "Code: 27, e.displayText() = …", older than the form the
			// client parses into a ClickHouseError; the code and the row are in the message.
			if !strings.HasPrefix(e.Message, "Code: 27,") || !strings.Contains(e.Message, "(at row 2)") || !strings.Contains(e.Message, "key n") {
				t.Fatalf("ClickHouse's error %s does not name code 27, row 2 and key n", e)
			}
		} else {
			if e.Class != "ClickHouseError" || e.Code == nil || *e.Code != "27" {
				t.Fatalf("error %s, want a ClickHouseError with code 27 (CANNOT_PARSE_INPUT_ASSERTION_FAILED)", e)
			}
			if !strings.Contains(e.Message, "row 2") || !strings.Contains(e.Message, "column n") && !strings.Contains(e.Message, `"n"`) {
				t.Fatalf("error message %q does not name row 2 and column n", e.Message)
			}
		}
		if got := tg.count(t, table); got != 0 {
			t.Fatalf("%d rows of the refused request are in %s, want none (a request is atomic)", got, table)
		}
	})
}

// insertResult is what insert() returned.
type insertResult struct {
	Executed bool            `json:"executed"`
	QueryID  string          `json:"query_id"`
	Summary  json.RawMessage `json:"summary"`
}

// check requires an executed insert whose X-ClickHouse-Summary (the client parses it into
// summary) counts want written rows.
func (r insertResult) check(t testing.TB, tg target, want int) {
	t.Helper()
	if !r.Executed || r.QueryID == "" {
		t.Fatalf("insert: executed %t, query_id %q", r.Executed, r.QueryID)
	}
	var s struct {
		WrittenRows string `json:"written_rows"`
	}
	if tg.gw == nil {
		return // ClickHouse 18.16 sends no X-ClickHouse-Summary (19.x added it)
	}
	if len(r.Summary) == 0 || string(r.Summary) == "null" {
		t.Fatalf("%s: insert returned no summary (X-ClickHouse-Summary)", tg.name)
	}
	if err := json.Unmarshal(r.Summary, &s); err != nil || s.WrittenRows != fmt.Sprint(want) {
		t.Fatalf("%s: summary %s, want written_rows %q", tg.name, r.Summary, fmt.Sprint(want))
	}
}

// requireQueryRows reads table back with the client's query() in format JSONEachRow and JSON
// and requires want (a JSON array of rows, ordered by id) from both; env is passed to the
// scripts.
func requireQueryRows(t testing.TB, tg target, table, want string, env ...string) {
	t.Helper()
	query := "CH_QUERY=SELECT id, n, level, note FROM " + table + " ORDER BY id"
	var each struct {
		Body json.RawMessage `json:"body"`
	}
	tg.mustNode(t, "query.mjs", nil, &each, append([]string{query, "CH_FORMAT=JSONEachRow"}, env...)...)
	requireSameJSON(t, "JSONEachRow rows", each.Body, want)

	var doc struct {
		Body struct {
			Meta []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"meta"`
			Data json.RawMessage `json:"data"`
			Rows int             `json:"rows"`
		} `json:"body"`
	}
	tg.mustNode(t, "query.mjs", nil, &doc, append([]string{query, "CH_FORMAT=JSON"}, env...)...)
	requireSameJSON(t, "JSON data", doc.Body.Data, want)
	var n []any
	_ = json.Unmarshal([]byte(want), &n)
	if doc.Body.Rows != len(n) {
		t.Fatalf("JSON rows = %d, want %d", doc.Body.Rows, len(n))
	}
	wantMeta := "id String, n UInt32, level Enum8('info' = 1, 'warn' = 2), note Nullable(String)"
	var got []string
	for _, m := range doc.Body.Meta {
		got = append(got, m.Name+" "+m.Type)
	}
	if strings.Join(got, ", ") != wantMeta {
		t.Fatalf("JSON meta %q, want %q", strings.Join(got, ", "), wantMeta)
	}
}

// requireSameJSON compares two JSON documents by value.
func requireSameJSON(t testing.TB, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %q is not JSON: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want %q is not JSON: %v", what, want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Fatalf("%s:\n got  %s\n want %s", what, gb, wb)
	}
}
