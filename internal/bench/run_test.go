package bench

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowServer answers every ingest request after delay, one at a time, like a gateway that cannot
// keep up; it has no query route, so rows are not counted. It stands in for the target only to
// check the tool's own arithmetic.
func slowServer(t *testing.T, delay time.Duration) string {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/ingest/") {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		time.Sleep(delay)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRateModeMeasuresFromTheScheduledSendTime: at a rate the server cannot keep up with, each
// request waits longer behind the previous ones; latency measured from when it was due shows that
// queueing (the last of 15 requests due every 20 ms against a 100 ms server is ≥ 1.2 s late),
// where measuring from the actual send would report ~100 ms for every request.
func TestRateModeMeasuresFromTheScheduledSendTime(t *testing.T) {
	const delay, requests = 100 * time.Millisecond, 15
	var progress bytes.Buffer
	rep, err := Run(t.Context(), Config{URL: slowServer(t, delay), Table: "t", Clients: 1, Rows: 1, Requests: requests,
		Rate: 50, Duration: time.Minute, Settle: time.Second, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Phases[0]
	if p.OKRequests != requests || p.FailedRequests != 0 || len(rep.Failed) != 0 {
		t.Fatalf("ok %d failed %d checks %v", p.OKRequests, p.FailedRequests, rep.Failed)
	}
	// Request n is due at n×20 ms and answered at ≥ (n+1)×100 ms.
	if want := time.Duration(requests)*delay - time.Duration(requests-1)*20*time.Millisecond; p.Latency.Max < want {
		t.Fatalf("max latency %s, want ≥ %s: latency is measured from the send, not the schedule", p.Latency.Max, want)
	}
	if lines := strings.Count(progress.String(), "\n"); lines < 1 || !strings.Contains(progress.String(), "ok ") {
		t.Fatalf("progress %q: want a line per second of a %s phase", progress.String(), p.Elapsed)
	}
}

func TestChecksNameWhatFailed(t *testing.T) {
	r := &Report{Config: Config{MaxErrorRatio: 0.1, Settle: time.Second}, Phases: []Phase{
		{Target: "a", Requests: 10, OKRequests: 10, Queryable: -1},
		{Target: "b", Requests: 10, OKRequests: 8, FailedRequests: 2, Queryable: -1},
		{Target: "c", Requests: 10, OKRequests: 10, AcceptedRows: 10, Queryable: 7},
		{Target: "d", Requests: 5, FailedRequests: 5, Queryable: -1},
		{Target: "e", Queryable: -1},
	}}
	got := strings.Join(r.checks(), "\n")
	for _, want := range []string{"b: 2 of 10 requests failed", "c: only 7 of 10 accepted rows", "d: none of 5 requests succeeded", "e: no request was sent"} {
		if !strings.Contains(got, want) {
			t.Errorf("checks %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "a:") {
		t.Errorf("a passing phase failed: %q", got)
	}
}

// TestIdempotencyKeysRunsAKeyedPhaseWithANewKeyPerRequest: --idempotency-keys runs the gateway
// phase twice; the first sends no key, the second ("gateway keyed") a distinct key on every
// request, over all clients and connections.
func TestIdempotencyKeysRunsAKeyedPhaseWithANewKeyPerRequest(t *testing.T) {
	const requests = 40
	var (
		mu       sync.Mutex
		keys     = map[string]int{}
		unkeyed  int
		srvCalls int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/ingest/") {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		srvCalls++
		if k := r.Header.Get("Idempotency-Key"); k != "" {
			keys[k]++
		} else {
			unkeyed++
		}
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	rep, err := Run(t.Context(), Config{URL: srv.URL, Table: "t", Clients: 4, Requests: requests,
		Duration: time.Minute, Settle: time.Second, IdempotencyKeys: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Phases) != 2 || rep.Phases[0].Target != "gateway" || rep.Phases[1].Target != "gateway keyed" {
		t.Fatalf("phases %+v: want gateway, then gateway keyed", rep.Phases)
	}
	mu.Lock()
	defer mu.Unlock()
	if unkeyed != requests || len(keys) != requests {
		t.Fatalf("%d unkeyed requests and %d distinct keys of %d calls: want %d of each", unkeyed, len(keys), srvCalls, requests)
	}
	for k, n := range keys {
		if n != 1 {
			t.Fatalf("key %q sent %d times", k, n)
		}
	}
}

// TestInterfacesAlternateOverTheSameRows: --interface ingest,clickhouse --rounds 3 runs six
// gateway phases, alternating, and the ClickHouse interface's requests carry the same NDJSON
// bodies as /v1/ingest's, as INSERT INTO <table> FORMAT JSONEachRow at /.
func TestInterfacesAlternateOverTheSameRows(t *testing.T) {
	const requests = 12
	var (
		mu           sync.Mutex
		ingestBodies = map[string]int{}
		chBodies     = map[string]int{}
		badQueries   []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.URL.Path == "/v1/ingest/t":
			ingestBodies[string(b)]++
			w.WriteHeader(http.StatusAccepted)
		case r.URL.Path == "/":
			if q := r.URL.Query().Get("query"); q != "INSERT INTO t FORMAT JSONEachRow" {
				badQueries = append(badQueries, q)
			}
			chBodies[string(b)]++
			w.WriteHeader(http.StatusOK)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	rep, err := Run(t.Context(), Config{URL: srv.URL, Table: "t", Clients: 2, Rows: 5, Requests: requests, Bodies: 4,
		Duration: time.Minute, Settle: time.Second, Interfaces: []string{InterfaceIngest, InterfaceClickHouse}, Rounds: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Phases {
		got = append(got, fmt.Sprintf("%s#%d", p.Target, p.Round))
		if p.OKRequests != requests || p.AcceptedRows != requests*5 {
			t.Errorf("%s round %d: ok %d accepted rows %d, want %d and %d", p.Target, p.Round, p.OKRequests, p.AcceptedRows, requests, requests*5)
		}
	}
	want := "gateway#1 gateway clickhouse#1 gateway clickhouse#2 gateway#2 gateway#3 gateway clickhouse#3"
	if strings.Join(got, " ") != want {
		t.Fatalf("phases %q, want %q", strings.Join(got, " "), want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(badQueries) > 0 {
		t.Fatalf("the clickhouse interface got queries %q", badQueries)
	}
	if len(ingestBodies) != 4 || !maps.Equal(ingestBodies, chBodies) {
		t.Fatalf("the interfaces got different bodies: %d distinct for /v1/ingest, %d for /", len(ingestBodies), len(chBodies))
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "clickhouse interface vs /v1/ingest: accepted rows/s") {
		t.Fatalf("the report has no comparison of the interfaces:\n%s", text.String())
	}
}

// TestGatewayPhasesReportTheGatewaysCPU: a gateway phase reads the gateway's
// process_cpu_seconds_total when it starts and when its load ends, and reports the difference,
// per second and per 2xx request; a server without the metric reports it unknown.
func TestGatewayPhasesReportTheGatewaysCPU(t *testing.T) {
	var mu sync.Mutex
	cpu := 10.0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/metrics":
			mu.Lock()
			cpu += 0.5
			fmt.Fprintf(w, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %g\nprocess_resident_memory_bytes 1e+08\n", cpu)
			mu.Unlock()
		case strings.HasPrefix(r.URL.Path, "/v1/ingest/"):
			w.WriteHeader(http.StatusAccepted)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	rep, err := Run(t.Context(), Config{URL: srv.URL, OpsURL: srv.URL, Table: "t", Clients: 2, Rows: 1, Requests: 100,
		Duration: time.Minute, Settle: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Phases[0]
	if p.OKRequests != 100 || p.GatewayCPUSeconds != 0.5 {
		t.Fatalf("ok %d, gateway CPU %g s; want 100 and the 0.5 s between the two reads", p.OKRequests, p.GatewayCPUSeconds)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), ", 5000 µs a 2xx request") {
		t.Fatalf("report lacks the CPU per request:\n%s", text.String())
	}
	rep, err = Run(t.Context(), Config{URL: slowServer(t, 0), OpsURL: slowServer(t, 0), Table: "t", Clients: 1, Rows: 1,
		Requests: 3, Duration: time.Minute, Settle: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Phases[0].GatewayCPUSeconds; got != -1 {
		t.Fatalf("gateway CPU without the metric = %g, want -1 (unknown)", got)
	}
}
