package stream_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/ingest/payload/payloadtest"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/stream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const tenant = "t1"

// openQueue starts an embedded queue on dir; it is closed at cleanup.
func openQueue(t testing.TB, dir string) *embeddedmq.Queue {
	t.Helper()
	q, err := embeddedmq.New(embeddedmq.Config{Dir: dir, Partitions: 1, TenantMaxBytes: -1, Sync: embeddedmq.SyncInterval}, embeddedmq.Deps{})
	if err != nil {
		t.Fatalf("queue: %v", err)
	}
	if err := q.Start(context.Background()); err != nil {
		t.Fatalf("queue start: %v", err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	return q
}

// encode returns the payload of rows (each a list of canonical values) under cols, in the
// version 1 (canonical JSON) format: untyped values, as a backlog of the previous release holds
// them. TestBinaryRendersAsVersion1 checks that binary rows render the same.
func encode(t testing.TB, cols []string, rows ...[]any) []byte {
	t.Helper()
	seg := payload.Segment{Columns: cols}
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		seg.Rows = append(seg.Rows, b)
	}
	p, err := payloadtest.EncodeV1([]payload.Segment{seg})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// publish stores one record of rows under columns (id, name) and returns its position.
func publish(t testing.TB, q mq.Publisher, table string, rows ...[]any) mq.Position {
	t.Helper()
	res, err := q.Publish(context.Background(), mq.Record{Tenant: tenant, Table: table, Payload: encode(t, []string{"id", "name"}, rows...)})
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return res.Position
}

type server struct {
	svc *stream.Service
	reg *prometheus.Registry
	url string
}

// newServer serves svc over httptest at url/v1/stream/{table}; the tenant is
// the X-Tenant header (default t1).
func newServer(t testing.TB, q mq.Replayer, cfg stream.Config) *server {
	t.Helper()
	reg := prometheus.NewRegistry()
	svc, err := stream.New(cfg, stream.Deps{Queue: q, Registerer: reg})
	if err != nil {
		t.Fatalf("stream.New: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/stream/{table}", func(w http.ResponseWriter, r *http.Request) {
		tn := r.Header.Get("X-Tenant")
		if tn == "" {
			tn = tenant
		}
		svc.ServeHTTP(w, r, tn)
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		_ = svc.Close(context.Background())
		hs.CloseClientConnections()
		hs.Close()
	})
	return &server{svc: svc, reg: reg, url: hs.URL}
}

// sseEvent is one parsed SSE block; comment-only blocks have Comment set.
type sseEvent struct {
	ID, Type, Data, Comment string
	HasID                   bool
}

// sseConn reads one SSE response.
type sseConn struct {
	resp   *http.Response
	cancel context.CancelFunc
	events chan sseEvent
	done   chan struct{}
	err    error
}

func dial(t testing.TB, url string, header map[string]string) *sseConn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", url, err)
	}
	c := &sseConn{resp: resp, cancel: cancel, events: make(chan sseEvent, 1<<16), done: make(chan struct{})}
	t.Cleanup(c.Close)
	if resp.StatusCode != http.StatusOK {
		return c
	}
	go c.read()
	return c
}

func (c *sseConn) read() {
	defer close(c.done)
	sc := bufio.NewScanner(c.resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var ev sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			ev.Data = strings.Join(data, "\n")
			c.events <- ev
			ev, data = sseEvent{}, nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			ev.Comment += value + ";"
		case "id":
			ev.ID, ev.HasID = value, true
		case "event":
			ev.Type = value
		case "data":
			data = append(data, value)
		case "retry":
			ev.Comment += "retry " + value + ";"
		}
	}
	c.err = sc.Err()
	close(c.events)
}

// Close cancels the request and waits for the reader.
func (c *sseConn) Close() {
	c.cancel()
	if c.resp.StatusCode == http.StatusOK {
		<-c.done
	}
	_ = c.resp.Body.Close()
}

// next returns the next event that is not a comment (rows, reset, gap or id-only).
func (c *sseConn) next(t testing.TB) sseEvent {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				t.Fatalf("stream ended (%v) while waiting for an event", c.err)
			}
			if ev.Type == "" && !ev.HasID {
				continue
			}
			return ev
		case <-deadline:
			t.Fatal("no event within 20s")
		}
	}
}

// nextRows returns the next rows event, failing on any other event type.
func (c *sseConn) nextRows(t testing.TB) sseEvent {
	t.Helper()
	ev := c.next(t)
	if ev.Type != "rows" {
		t.Fatalf("got event %q (id %q, data %s), want rows", ev.Type, ev.ID, ev.Data)
	}
	return ev
}

// comment waits for a comment block containing s.
func (c *sseConn) comment(t testing.TB, s string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				t.Fatalf("stream ended while waiting for comment %q", s)
			}
			if strings.Contains(ev.Comment, s) {
				return
			}
		case <-deadline:
			t.Fatalf("no comment %q within 20s", s)
		}
	}
}

// warm publishes probe records to table until every conn received one, so
// the shared live reader is known to be running; it returns the probes'
// last position. Live (since=now) streams only see records published after
// the reader started.
func warm(t testing.TB, q testQueue, table string, conns ...*sseConn) mq.Position {
	t.Helper()
	var last mq.Position
	got := make([]bool, len(conns))
	seen := make([]string, len(conns))
	deadline := time.Now().Add(20 * time.Second)
	for {
		last = publish(t, q, table, []any{-1, "probe"})
		all := true
		for i, c := range conns {
			for !got[i] {
				select {
				case ev, ok := <-c.events:
					if !ok {
						t.Fatal("stream ended during warm-up")
					}
					if ev.Type == "rows" {
						got[i], seen[i] = true, ev.ID
					}
					continue
				case <-time.After(20 * time.Millisecond):
				}
				break
			}
			all = all && got[i]
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("live reader did not start within 20s")
		}
	}
	// Drain the probes up to last, so the caller starts from a clean point.
	for i, c := range conns {
		for seen[i] != eid(t, q, table, last) {
			seen[i] = c.nextRows(t).ID
		}
	}
	return last
}

func streamURL(s *server, table, query string) string {
	u := s.url + "/v1/stream/" + table
	if query != "" {
		u += "?" + query
	}
	return u
}

func rowData(id int, name string) string { return fmt.Sprintf(`{"id":%d,"name":%q}`, id, name) }

// gatherCounter returns the value of a counter (summed over labels matching
// label=value when label is set).
func gatherCounter(t testing.TB, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			ok := label == ""
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					ok = true
				}
			}
			if !ok {
				continue
			}
			if m.Counter != nil {
				sum += m.GetCounter().GetValue()
			} else if m.Gauge != nil {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// testQueue is what the helpers publish to and read epochs from.
type testQueue interface {
	mq.Publisher
	epocher
}

// epocher is a queue that tells a table's current epoch (both JetStream backends).
type epocher interface {
	Epoch(ctx context.Context, tenant, table string) (string, error)
}

// eid returns the event id of position p of table in q's current epoch.
func eid(t testing.TB, q epocher, table string, p mq.Position) string {
	t.Helper()
	e, err := q.Epoch(context.Background(), tenant, table)
	if err != nil {
		t.Fatalf("epoch: %v", err)
	}
	return e + "-" + p.String()
}

// posOf returns the queue position of event id "<epoch>-<seq>-<index>".
func posOf(t testing.TB, id string) mq.Position {
	t.Helper()
	_, rest, _ := strings.Cut(id, "-")
	p, err := mq.ParsePosition(rest)
	if err != nil {
		t.Fatalf("event id %q: %v", id, err)
	}
	return p
}
