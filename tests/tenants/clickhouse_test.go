package tenants_test

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// chCredential is how a request to the ClickHouse interface carries token: as Bearer (the
// token returned, for request), or, with basic, as the password of HTTP Basic with the user
// default, as ClickHouse clients send it (an empty token and the header pair returned).
func chCredential(token string, basic bool) (string, []string) {
	if !basic || token == "" {
		return token, nil
	}
	return "", []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("default:"+token))}
}

// chInsert posts rows as INSERT INTO table FORMAT JSONEachRow through the ClickHouse interface
// with token (see chCredential), params added to the URL (wait=committed) and hdr on top.
func (g *gateway) chInsert(t testing.TB, token string, basic bool, table, params, rows string, hdr ...string) gatewaybin.Response {
	t.Helper()
	path := "/?query=" + url.QueryEscape("INSERT INTO "+table+" FORMAT JSONEachRow")
	if params != "" {
		path += "&" + params
	}
	token, cred := chCredential(token, basic)
	return g.do(t, http.MethodPost, path, token, []byte(rows), append(append(cred, "Content-Type", "text/plain"), hdr...)...)
}

// insertRoute is one way a test inserts a JSON row: /v1/ingest, or the ClickHouse interface.
type insertRoute struct {
	Name string
	// Basic sends the credential of a ClickHouse insert as the Basic password, else as Bearer.
	Basic bool
	// JSONErrors asks the ClickHouse interface for the gateway's JSON errors.
	JSONErrors bool
	ClickHouse bool
}

// insertRoutes are /v1/ingest, the ClickHouse interface with a Bearer token and JSON errors,
// and with the token as the Basic password and ClickHouse's own errors.
var insertRoutes = []insertRoute{
	{Name: "/v1/ingest"},
	{Name: "/ (Bearer, Accept: application/json)", ClickHouse: true, JSONErrors: true},
	{Name: "/ (Basic password)", ClickHouse: true, Basic: true},
}

// insert sends rows (NDJSON) to table as token through the route; params are URL parameters.
func (ir insertRoute) insert(t testing.TB, g *gateway, token, table, params, rows string, hdr ...string) gatewaybin.Response {
	t.Helper()
	if !ir.ClickHouse {
		return g.ingest(t, token, table, params, rows, append([]string{"Content-Type", "application/x-ndjson"}, hdr...)...)
	}
	if ir.JSONErrors {
		hdr = append(hdr, "Accept", "application/json")
	}
	return g.chInsert(t, token, ir.Basic, table, params, rows, hdr...)
}

// accepted is the status an insert without a wait is answered with: 202 on /v1/ingest, 200 on
// the ClickHouse interface (ClickHouse clients take only 200 for success).
func (ir insertRoute) accepted() int {
	if ir.ClickHouse {
		return http.StatusOK
	}
	return http.StatusAccepted
}

// code is the gateway's error code of r: X-Wavehouse-Error-Code on an answer in ClickHouse's
// form, else the JSON body's code.
func (ir insertRoute) code(r gatewaybin.Response) string {
	if ir.ClickHouse && !ir.JSONErrors {
		return r.Header.Get("X-Wavehouse-Error-Code")
	}
	return r.Code()
}

// checkRowRefused requires r to be a 400 ingest.invalid_rows whose first row error, at row
// (counted from 0), has the row code and names column ("" for a row-level refusal): the row code and column from the JSON
// details; in ClickHouse's form, Code 27, the row counted from 1 and the column from the text.
func (ir insertRoute) checkRowRefused(t *testing.T, r gatewaybin.Response, what string, row int, code, column string) {
	t.Helper()
	what += " through " + ir.Name
	if r.Status != http.StatusBadRequest || ir.code(r) != "ingest.invalid_rows" {
		t.Errorf("%s: %s, want 400 ingest.invalid_rows", what, r)
		return
	}
	if ir.ClickHouse && r.Header.Get("X-ClickHouse-Exception-Code") != "27" {
		t.Errorf("%s: X-ClickHouse-Exception-Code %q, want 27", what, r.Header.Get("X-ClickHouse-Exception-Code"))
	}
	if ir.ClickHouse && !ir.JSONErrors {
		body := string(r.Body)
		if !strings.HasPrefix(body, "Code: 27. DB::Exception: ") || !strings.Contains(body, "at row "+strconv.Itoa(row+1)) || (column != "" && !strings.Contains(body, `"`+column+`"`)) {
			t.Errorf("%s: %q, want Code 27 naming row %d and column %s", what, body, row+1, column)
		}
		return
	}
	var e struct {
		Details struct {
			Errors []struct {
				Row    int    `json:"row"`
				Column string `json:"column"`
				Code   string `json:"code"`
			} `json:"errors"`
		} `json:"details"`
	}
	r.JSON(t, &e)
	if len(e.Details.Errors) == 0 || e.Details.Errors[0].Row != row || e.Details.Errors[0].Code != code || e.Details.Errors[0].Column != column {
		t.Errorf("%s: %s, want the first row error at row %d, column %s, code %s", what, r, row, column, code)
	}
}

// TestClickHouseLimits refuses inserts over a tenant's limits (rows and requests rates, queue
// budget) through every insert route, and
// requires the ClickHouse interface's refusal to be /v1/ingest's in ClickHouse's form: 429, the
// same gateway code, Code 202 (TOO_MANY_SIMULTANEOUS_QUERIES), and the Retry-After and
// RateLimit-* headers whenever /v1/ingest sends them. The limits refill so slowly (one token in
// 1000 s) that no refusal depends on timing.
func TestClickHouseLimits(t *testing.T) {
	t.Parallel()
	rows := &tenant{Name: "rows", Database: "tenant_rows", Limits: "{rows_per_second: 0.001, rows_burst: 4}"}
	reqs := &tenant{Name: "reqs", Database: "tenant_reqs", Limits: "{requests_per_second: 0.001, burst: 1}"}
	// A queue budget of one byte: no row fits.
	queue := &tenant{Name: "queue", Database: "tenant_queue", Limits: "{queue_max_bytes: 1}"}
	for _, tn := range []*tenant{rows, reqs, queue} {
		tn.Keys = []*apiKey{newKey(t, tn.Name, "admin", "admin", ""), newKey(t, tn.Name, "ingest", "ingest,query", "")}
	}
	g := startGateway(t, gatewayOptions{}, rows, reqs, queue)
	g.sql(t, rows.key(t, "admin").Token, "", eventsDDL)
	g.sql(t, queue.key(t, "admin").Token, "", eventsDDL)
	tok := rows.key(t, "ingest").Token
	// Two rows through /v1/ingest and two through / take the burst of four.
	if r := insertRoutes[0].insert(t, g, tok, "events", "", "{\"id\":\"r1\",\"n\":1}\n{\"id\":\"r2\",\"n\":1}"); r.Status != http.StatusAccepted {
		t.Fatalf("two rows through /v1/ingest within the burst: %s, want 202", r)
	}
	if r := insertRoutes[2].insert(t, g, tok, "events", "", "{\"id\":\"r3\",\"n\":1}\n{\"id\":\"r4\",\"n\":1}"); r.Status != http.StatusOK {
		t.Fatalf("two rows through / within the burst: %s, want 200", r)
	}
	five := strings.Repeat(`{"id":"big","n":1}`+"\n", 5)
	// The one request reqs may send passes (its table does not exist: the answer does not matter).
	if r := g.ingest(t, reqs.key(t, "ingest").Token, "events", "", `{"id":"x"}`); r.Status == http.StatusTooManyRequests {
		t.Fatalf("tenant reqs' first request: %s, want it to pass its limiter", r)
	}
	for _, c := range []struct {
		what, token, rows, code string
		retryable               bool
	}{
		{"a row over the tenant's rows rate", tok, `{"id":"r5","n":1}`, "limits.rows", true},
		{"more rows than rows_burst", tok, five, "limits.rows", false},
		{"a request over the tenant's requests rate", reqs.key(t, "ingest").Token, `{"id":"x"}`, "limits.requests", true},
		{"a row over the tenant's queue budget", queue.key(t, "ingest").Token, `{"id":"q1","n":1}`, "ingest.queue_full", true},
	} {
		var ref gatewaybin.Response // /v1/ingest's answer, the first route's
		for _, ir := range insertRoutes {
			what := c.what + " through " + ir.Name
			r := ir.insert(t, g, c.token, "events", "", c.rows)
			if r.Status != http.StatusTooManyRequests || ir.code(r) != c.code {
				t.Errorf("%s: %s, want 429 %s", what, r, c.code)
				continue
			}
			if !ir.ClickHouse {
				ref = r
				if e := r.APIError(); e.Retryable != c.retryable {
					t.Errorf("%s: retryable %t, want %t", what, e.Retryable, c.retryable)
				}
				continue
			}
			if exc := r.Header.Get("X-ClickHouse-Exception-Code"); exc != "202" {
				t.Errorf("%s: X-ClickHouse-Exception-Code %q, want 202", what, exc)
			}
			if !ir.JSONErrors && !strings.HasPrefix(string(r.Body), "Code: 202. DB::Exception: ") || !ir.JSONErrors && !strings.Contains(string(r.Body), "(TOO_MANY_SIMULTANEOUS_QUERIES)") {
				t.Errorf("%s: %q, want Code 202 (TOO_MANY_SIMULTANEOUS_QUERIES)", what, r.Body)
			}
			for _, h := range []string{"Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
				if (ref.Header.Get(h) == "") != (r.Header.Get(h) == "") {
					t.Errorf("%s: %s %q, /v1/ingest sent %q", what, h, r.Header.Get(h), ref.Header.Get(h))
				}
			}
			if ra := ref.Header.Get("Retry-After"); ra != "" {
				if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n < 1 {
					t.Errorf("%s: Retry-After %q, want whole seconds ≥ 1 as /v1/ingest's %s", what, r.Header.Get("Retry-After"), ra)
				}
			}
		}
		if c.retryable && ref.Header.Get("Retry-After") == "" {
			t.Errorf("%s through /v1/ingest: no Retry-After on a retryable refusal", c.what)
		}
	}
	if got := g.ids(t, tok, "SELECT id FROM events WHERE id IN ('r5', 'big')"); len(got) != 0 {
		t.Errorf("refused rows were stored: %q", got)
	}
}
