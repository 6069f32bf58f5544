package split

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// response is a decoded HTTP answer.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) String() string { return fmt.Sprintf("%d %s", r.Status, bytes.TrimSpace(r.Body)) }

// try sends one request to the api process and reads the whole answer.
func (p *proc) try(ctx context.Context, method, path, contentType string, body []byte) (response, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.API+path, bytes.NewReader(body))
	if err != nil {
		return response{}, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := p.HTTP.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// sql runs operator SQL (DDL) through /v1/ops/sql with the operator key the api process
// generated, and requires success.
func (p *proc) sql(t *testing.T, stmt string) {
	t.Helper()
	p.client().MustOpsSQL(t, p.OperatorKey(t), gatewaybin.DefaultTenant, stmt)
}

// ops calls an operator route (/v1/ops/…) of the default tenant as the operator, with the key
// the api process generated.
func (p *proc) ops(t *testing.T, method, path string) gatewaybin.Response {
	t.Helper()
	return p.client().Ops(t, p.OperatorKey(t), gatewaybin.DefaultTenant, method, path, nil)
}

// client is a gatewaybin client of the api process's listener.
func (p *proc) client() gatewaybin.Client { return gatewaybin.Client{Base: p.API, HTTP: p.HTTP} }

// count runs SELECT toString(count()) through the api's /v1/query and returns the count and
// the X-Cache header.
func (p *proc) count(t *testing.T, table string) (int, string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"sql": "SELECT toString(count()) AS n FROM " + table, "format": "ndjson"})
	r, err := p.try(t.Context(), http.MethodPost, "/v1/query", "application/json", b)
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("%s query: %v %s", p.Name, err, r)
	}
	var row struct{ N string }
	if err := json.Unmarshal(bytes.TrimSpace(r.Body), &row); err != nil {
		t.Fatalf("%s query: decoding %q: %v", p.Name, r.Body, err)
	}
	n, err := strconv.Atoi(row.N)
	if err != nil {
		t.Fatalf("%s query: count %q: %v", p.Name, row.N, err)
	}
	return n, r.Header.Get("X-Cache")
}

// serverIDs returns the distinct ids and the row count of a table, read straight from ClickHouse.
func (b *backends) serverIDs(t *testing.T, table string) (map[string]bool, int) {
	t.Helper()
	out, err := b.CH.Query(t.Context(), "SELECT id FROM "+b.Database+"."+table+" FORMAT TabSeparated")
	if err != nil {
		t.Fatalf("select ids: %v", err)
	}
	ids := map[string]bool{}
	rows := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if sc.Text() != "" {
			ids[sc.Text()] = true
			rows++
		}
	}
	return ids, rows
}

// serverCount returns count() of a table, read straight from ClickHouse.
func (b *backends) serverCount(t *testing.T, table string) int {
	t.Helper()
	out, err := b.CH.Query(t.Context(), "SELECT count() FROM "+b.Database+"."+table)
	if err != nil {
		t.Fatalf("count: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("count %q: %v", out, err)
	}
	return n
}

// ackLog records every row that got a 2xx and every refused answer.
type ackLog struct {
	mu       sync.Mutex
	ids      map[string]struct{}
	requests int
	sent     []time.Time // when each acknowledged request was sent
	refused  []refusal
}

// refusal is one non-2xx ingest answer (or transport error) and when it came.
type refusal struct {
	At         time.Time
	Via        string
	Status     int // 0: transport error
	RetryAfter string
	Body       string
}

func newAckLog() *ackLog { return &ackLog{ids: map[string]struct{}{}} }

func (a *ackLog) add(sent time.Time, ids []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range ids {
		a.ids[id] = struct{}{}
	}
	a.requests++
	a.sent = append(a.sent, sent)
}

// sentAfter returns how many acknowledged requests were sent after at.
func (a *ackLog) sentAfter(at time.Time) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, s := range a.sent {
		if s.After(at) {
			n++
		}
	}
	return n
}

func (a *ackLog) refuse(r refusal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refused = append(a.refused, r)
}

// acked returns the number of acknowledged requests so far.
func (a *ackLog) acked() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests
}

// load posts NDJSON requests of unique rows through api until ctx ends, recording the
// acknowledged ones.
func load(ctx context.Context, api *proc, table, prefix string, rowsPerRequest int, acks *ackLog) {
	for seq := 0; ctx.Err() == nil; seq++ {
		ids := make([]string, rowsPerRequest)
		var b strings.Builder
		for j := range ids {
			ids[j] = fmt.Sprintf("%s-%d-%d", prefix, seq, j)
			fmt.Fprintf(&b, "{\"id\":%q,\"n\":%d}\n", ids[j], seq)
		}
		sent := time.Now()
		resp, err := api.try(ctx, http.MethodPost, "/v1/ingest/"+table, "application/x-ndjson", []byte(b.String()))
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && resp.Status/100 == 2:
			acks.add(sent, ids)
			continue
		case err != nil:
			acks.refuse(refusal{At: time.Now(), Via: api.Name, Body: err.Error()})
		default:
			acks.refuse(refusal{At: time.Now(), Via: api.Name, Status: resp.Status, RetryAfter: resp.Header.Get("Retry-After"), Body: string(resp.Body)})
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// startLoad runs clientsPerAPI load clients on every api process until the returned stop
// function is called.
func startLoad(t *testing.T, apis []*proc, table string, clientsPerAPI int, acks *ackLog) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, api := range apis {
		for c := range clientsPerAPI {
			prefix := fmt.Sprintf("%s-c%d-%d", api.Name, c, time.Now().UnixNano())
			wg.Go(func() { load(ctx, api, table, prefix, 20, acks) })
		}
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// requireAllAcked waits until every acknowledged row is in ClickHouse and then requires it.
func requireAllAcked(t *testing.T, b *backends, table string, acks *ackLog, timeout time.Duration) {
	t.Helper()
	acks.mu.Lock()
	want := make([]string, 0, len(acks.ids))
	for id := range acks.ids {
		want = append(want, id)
	}
	acks.mu.Unlock()
	var (
		ids  map[string]bool
		rows int
	)
	deadline := time.Now().Add(timeout)
	for {
		ids, rows = b.serverIDs(t, table)
		missing := 0
		for _, id := range want {
			if !ids[id] {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			shown := 0
			for _, id := range want {
				if !ids[id] && shown < 10 {
					shown++
					t.Errorf("acknowledged row %s is not in ClickHouse", id)
				}
			}
			t.Fatalf("%d of %d acknowledged rows missing after %s", missing, len(want), timeout)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
	t.Logf("all %d acknowledged rows are in ClickHouse (%d rows stored, %d distinct, %d refused answers)",
		len(want), rows, len(ids), len(acks.refused))
}
