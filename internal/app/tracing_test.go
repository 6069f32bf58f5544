package app

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/logging"
	"github.com/wavehouse/wavehouse/internal/testutil/logbuf"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it accepts POST /v1/traces, decodes the protobuf
// ExportTraceServiceRequest and keeps every span.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want POST /v1/traces application/x-protobuf", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// find returns the first received span for which match is true.
func (o *otlpReceiver) find(match func(*tracepb.Span) bool) *tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.spans {
		if match(s) {
			return s
		}
	}
	return nil
}

// TestTracingLinksRequestPublishInsert runs the gateway with tracing on, exporting over OTLP/HTTP
// to a receiver that decodes the protobuf, sends an ingest with a client traceparent and checks
// that one trace links HTTP → publish → insert: the server span continues the client's trace and
// is named by its route, the publish span is its child, and the insert span (in the writer, a
// trace of its own) links to the server span through the traceparent in the queue headers. The
// request's log lines name the server span. A query that misses the cache has a cache fill span
// with the store query under it.
func TestTracingLinksRequestPublishInsert(t *testing.T) {
	rcv := &otlpReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // ms: export while the test waits
	cfg := testConfig(t)
	cfg.Tracing.Enabled = true
	cfg.Ingest.Flush.MaxWait = config.Duration(50 * time.Millisecond)
	var logs logbuf.Buffer
	log, err := logging.New(&logs, logging.Options{Level: "debug"})
	if err != nil {
		t.Fatal(err)
	}
	a := startAppWithLog(t, cfg, log)
	base := "http://" + a.APIAddr()
	if r := opsCall(t, a, "POST", "/v1/ops/sql", `{"sql":"CREATE TABLE tr (id UInt64) ENGINE = MergeTree ORDER BY id"}`); r.code != 200 {
		t.Fatalf("create: %d %s", r.code, r.raw)
	}
	const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	r := call(t, "POST", base+"/v1/ingest/tr?wait=committed", "application/json", `{"id":1}`, "traceparent", "00-"+traceID+"-"+clientSpan+"-01")
	if r.code != 200 {
		t.Fatalf("ingest: %d %s", r.code, r.raw)
	}

	var server, publish, insert *tracepb.Span
	poll.Until(t, 10*time.Second, "server, publish and insert spans exported", func() bool {
		server = rcv.find(func(s *tracepb.Span) bool {
			return hex.EncodeToString(s.TraceId) == traceID && s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == "POST /v1/ingest/{table}"
		})
		if server == nil {
			return false
		}
		publish = rcv.find(func(s *tracepb.Span) bool {
			return s.Name == "publish" && bytes.Equal(s.TraceId, server.TraceId) && bytes.Equal(s.ParentSpanId, server.SpanId)
		})
		insert = rcv.find(func(s *tracepb.Span) bool {
			if s.Name != "insert" {
				return false
			}
			for _, l := range s.Links {
				if bytes.Equal(l.TraceId, server.TraceId) && bytes.Equal(l.SpanId, server.SpanId) {
					return true
				}
			}
			return false
		})
		return publish != nil && insert != nil
	})
	if got := hex.EncodeToString(server.ParentSpanId); got != clientSpan {
		t.Errorf("server span parent = %s, want the client's span %s", got, clientSpan)
	}
	if publish.Kind != tracepb.Span_SPAN_KIND_PRODUCER || insert.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("kinds: publish %v, insert %v", publish.Kind, insert.Kind)
	}
	if tp := r.header.Get("traceparent"); !strings.Contains(tp, traceID+"-"+hex.EncodeToString(server.SpanId)) {
		t.Errorf("response traceparent %q does not name the server span", tp)
	}
	// A query that misses the cache: its server span, the cache fill under it, the query under that.
	if q := call(t, "POST", base+"/v1/query", "application/json", `{"sql":"SELECT id FROM tr"}`); q.code != 200 || q.header.Get("X-Cache") != "MISS" {
		t.Fatalf("query: %d %s %s", q.code, q.header.Get("X-Cache"), q.raw)
	}
	poll.Until(t, 10*time.Second, "query, cache fill and store query spans exported", func() bool {
		qs := rcv.find(func(s *tracepb.Span) bool {
			return s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == "POST /v1/query"
		})
		if qs == nil {
			return false
		}
		fill := rcv.find(func(s *tracepb.Span) bool { return s.Name == "cache fill" && bytes.Equal(s.ParentSpanId, qs.SpanId) })
		return fill != nil && rcv.find(func(s *tracepb.Span) bool { return s.Name == "query" && bytes.Equal(s.ParentSpanId, fill.SpanId) }) != nil
	})
	// The access log line of the request carries the server span's trace and span ids.
	wantSpan := hex.EncodeToString(server.SpanId)
	found := false
	for _, line := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "http request" && m["path"] == "/v1/ingest/tr" {
			found = m["trace_id"] == traceID && m["span_id"] == wantSpan
		}
	}
	if !found {
		t.Errorf("no access log line of the ingest with trace_id %s span_id %s:\n%s", traceID, wantSpan, logs.String())
	}
}
