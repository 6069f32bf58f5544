package tenants_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// request is the header of a request with token as the bearer credential ("" sends none), a
// JSON Content-Type when there is a body, and hdr, pairs of header name and value, on top.
func request(token string, body []byte, hdr ...string) http.Header {
	h := http.Header{}
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	return h
}

// api is the client of the API listener at the address the process reported (known once it
// started; restarts keep it).
func (g *gateway) api() gatewaybin.Client {
	c := g.client
	c.Base = g.proc.APIURL()
	return c
}

// do sends one request with token (see request) and reads the whole answer; a transport error
// fails the test.
func (g *gateway) do(t testing.TB, method, path, token string, body []byte, hdr ...string) gatewaybin.Response {
	t.Helper()
	return g.api().Do(t, method, path, request(token, body, hdr...), body)
}

// try is do returning the transport error.
func (g *gateway) try(ctx context.Context, method, path, token string, body []byte, hdr ...string) (gatewaybin.Response, error) {
	return g.api().Try(ctx, method, path, request(token, body, hdr...), body)
}

// send sends one request with token (see request) and returns the open response.
func (g *gateway) send(ctx context.Context, method, path, token string, body []byte, hdr ...string) (*http.Response, error) {
	return g.api().Send(ctx, method, path, request(token, body, hdr...), body)
}

// sql runs operator SQL through /v1/ops/sql with token (an admin key, or the operator key with
// ?tenant=tenantParam) and requires success.
func (g *gateway) sql(t testing.TB, token, tenantParam, stmt string) {
	t.Helper()
	g.api().MustOpsSQL(t, token, tenantParam, stmt)
}

// ingest posts one JSON row and returns the answer.
func (g *gateway) ingest(t testing.TB, token, table, query, row string, hdr ...string) gatewaybin.Response {
	t.Helper()
	path := "/v1/ingest/" + table
	if query != "" {
		path += "?" + query
	}
	return g.do(t, http.MethodPost, path, token, []byte(row), hdr...)
}

// query runs SQL through /v1/query (ndjson) and returns the answer.
func (g *gateway) query(t testing.TB, token, stmt string) gatewaybin.Response {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"sql": stmt, "format": "ndjson"})
	return g.do(t, http.MethodPost, "/v1/query", token, b)
}

// ids runs SQL selecting a column id through /v1/query, requires 200 and returns the ids.
func (g *gateway) ids(t testing.TB, token, stmt string) []string {
	t.Helper()
	r := g.query(t, token, stmt)
	if r.Status != http.StatusOK {
		t.Fatalf("query %q: %s", stmt, r)
	}
	return idsOf(t, r.Body)
}

// idsOf decodes ndjson rows and returns their id fields.
func idsOf(t testing.TB, b []byte) []string {
	t.Helper()
	var out []string
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var row struct {
			ID string `json:"id"`
		}
		if err := dec.Decode(&row); err != nil {
			t.Fatalf("decoding rows %q: %v", b, err)
		}
		out = append(out, row.ID)
	}
	return out
}

// stream is an open SSE connection collecting the data lines of its events.
type stream struct {
	Status int
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	data []string
}

// openStream opens /v1/stream/{table}?since=0 with token (table may carry more query
// parameters: events?token=…). A non-200 answer is returned with
// the stream already closed.
func (g *gateway) openStream(t testing.TB, token, table string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sep := "?"
	if strings.Contains(table, "?") {
		sep = "&"
	}
	resp, err := g.send(ctx, http.MethodGet, "/v1/stream/"+table+sep+"since=0", token, nil, "Accept", "text/event-stream")
	if err != nil {
		cancel()
		t.Fatalf("stream %s: %v", table, err)
	}
	s := &stream{Status: resp.StatusCode, cancel: cancel, done: make(chan struct{})}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				s.mu.Lock()
				s.data = append(s.data, d)
				s.mu.Unlock()
			}
		}
	}()
	t.Cleanup(s.close)
	return s
}

// text returns every data line received so far.
func (s *stream) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.data, "\n")
}

// waitFor waits until the stream has delivered marker.
func (s *stream) waitFor(t testing.TB, what, marker string) {
	t.Helper()
	poll.Until(t, 30*time.Second, what, func() bool { return strings.Contains(s.text(), marker) })
}

// close ends the stream and waits for its reader.
func (s *stream) close() {
	s.cancel()
	<-s.done
}
