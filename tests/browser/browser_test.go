// Package browser_test drives a real headless Chromium against the SSE
// stream: the page's EventSource must resume by itself after the server
// drops the connection, with no gap and no duplicate.
package browser_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/ingest/payload/payloadtest"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/stream"
	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// binaryPath is the wavehouse binary TestMain builds for the tests that run the gateway.
var binaryPath string

func TestMain(m *testing.M) {
	os.Exit(gatewaybin.Main(m, gatewaybin.Suite{Name: "browser", LeakCheck: true}, &binaryPath))
}

// chromium returns the path of the chromium binary; without one the test is skipped (failed
// under CI=true).
func chromium(t *testing.T) (string, bool) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		testsvc.Missing(t, "chromium is not installed (apt-get install -y chromium)")
		return "", false
	}
	return bin, true
}

// startChromium loads url in a headless Chromium that dumps the DOM once the page has loaded
// (a page holds its load event with a script the test answers late, to keep the browser
// running until it reported). exited receives the process's end; out collects its output.
func startChromium(ctx context.Context, t *testing.T, bin, url string) (exited chan error, out *bytes.Buffer) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-dev-shm-usage", "--no-first-run", "--user-data-dir="+t.TempDir(), "--dump-dom", url)
	out = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	exited = make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return exited, out
}

const page = `<!doctype html>
<html><head><title>stream</title></head><body>
<ol id="ids"></ol>
<script>
const want = %d;
const ids = [];
let reported = false;
const es = new EventSource("/v1/stream/events?since=0");
es.addEventListener("rows", (e) => {
  ids.push(e.lastEventId);
  const li = document.createElement("li");
  li.textContent = e.lastEventId;
  document.getElementById("ids").appendChild(li);
  if (ids.length >= want && !reported) {
    reported = true;
    es.close();
    fetch("/report", {method: "POST", body: JSON.stringify(ids)});
  }
});
</script>
<script src="/hold.js"></script>
</body></html>`

// cutWriter passes SSE blocks through until it wrote cutAfter rows events,
// then drops the rest and cancels the request: the server ends the stream
// right after that event.
type cutWriter struct {
	http.ResponseWriter
	cutAfter int
	rows     int
	cancel   context.CancelFunc
}

var errCut = errors.New("connection cut by the test")

func (w *cutWriter) Write(b []byte) (int, error) {
	if w.rows >= w.cutAfter {
		return 0, errCut
	}
	rest := b
	for len(rest) > 0 {
		end := bytes.Index(rest, []byte("\n\n"))
		if end < 0 {
			end = len(rest)
		} else {
			end += 2
		}
		block := rest[:end]
		if _, err := w.ResponseWriter.Write(block); err != nil {
			return 0, err
		}
		rest = rest[end:]
		if bytes.Contains(block, []byte("event: rows\n")) {
			if w.rows++; w.rows >= w.cutAfter {
				w.cancel()
				return 0, errCut
			}
		}
	}
	return len(b), nil
}

func (w *cutWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func (w *cutWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func TestEventSourceResumesWithoutGap(t *testing.T) {
	bin, ok := chromium(t)
	if !ok {
		return
	}
	q, err := embeddedmq.New(embeddedmq.Config{Dir: t.TempDir(), Partitions: 1, TenantMaxBytes: -1}, embeddedmq.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	svc, err := stream.New(stream.Config{Retry: 200 * time.Millisecond}, stream.Deps{Queue: q})
	if err != nil {
		t.Fatal(err)
	}

	var published []string
	publish := func(i int) {
		seg, err := payloadtest.Binary([]string{"n"}, []string{"Int64"}, fmt.Sprintf("[%d]", i))
		if err != nil {
			t.Error(err)
			return
		}
		p, err := payload.Encode([]payload.Segment{seg})
		if err != nil {
			t.Error(err)
			return
		}
		res, err := q.Publish(context.Background(), mq.Record{Tenant: "default", Table: "events", Payload: p})
		if err != nil {
			t.Error(err)
			return
		}
		epoch, err := q.Epoch(context.Background(), "default", "events")
		if err != nil {
			t.Error(err)
			return
		}
		published = append(published, epoch+"-"+res.Position.String())
	}
	const before, after, cut = 15, 15, 5
	for i := range before {
		publish(i)
	}

	var (
		mu          sync.Mutex
		connections []string // Last-Event-ID of each stream request
		report      = make(chan []string, 1)
		resumed     = make(chan struct{})
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, page, before+after)
	})
	mux.HandleFunc("GET /v1/stream/{table}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		connections = append(connections, r.Header.Get("Last-Event-ID"))
		n := len(connections)
		mu.Unlock()
		if n == 1 {
			// The first connection is dropped by the server mid-stream.
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			svc.ServeHTTP(&cutWriter{ResponseWriter: w, cutAfter: cut, cancel: cancel}, r.WithContext(ctx), "default")
			return
		}
		if n == 2 {
			close(resumed)
		}
		svc.ServeHTTP(w, r, "default")
	})
	mux.HandleFunc("POST /report", func(w http.ResponseWriter, r *http.Request) {
		var ids []string
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &ids); err != nil {
			t.Errorf("report: %v", err)
		}
		select {
		case report <- ids:
		default:
		}
	})
	holdDone := make(chan struct{})
	mux.HandleFunc("GET /hold.js", func(w http.ResponseWriter, r *http.Request) {
		// Holding this script holds the page's load event, so --dump-dom
		// keeps the browser running until the page reported.
		select {
		case <-holdDone:
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "text/javascript")
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		_ = svc.Close(context.Background())
		hs.CloseClientConnections()
		hs.Close()
	})

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	exited, out := startChromium(ctx, t, bin, hs.URL+"/")

	// Records published after the browser reconnected reach it live.
	select {
	case <-resumed:
	case err := <-exited:
		t.Fatalf("chromium exited before reconnecting: %v\n%s", err, out.String())
	case <-ctx.Done():
		t.Fatalf("the browser did not reconnect: %v\n%s", ctx.Err(), out.String())
	}
	for i := range after {
		publish(before + i)
	}
	var ids []string
	select {
	case ids = <-report:
	case err := <-exited:
		t.Fatalf("chromium exited before reporting: %v\n%s", err, out.String())
	case <-ctx.Done():
		t.Fatalf("no report from the page: %v\n%s", ctx.Err(), out.String())
	}
	close(holdDone)
	select {
	case <-exited:
	case <-ctx.Done():
		t.Error("chromium did not exit after the page loaded")
	}

	mu.Lock()
	defer mu.Unlock()
	if len(connections) < 2 || connections[0] != "" || connections[1] == "" {
		t.Fatalf("stream requests' Last-Event-ID headers %q: want a first request without and a reconnect with one", connections)
	}
	if connections[1] != published[cut-1] {
		t.Fatalf("the reconnect resumed after %q, want %q, the last event before the cut", connections[1], published[cut-1])
	}
	if !slices.Equal(ids, published) {
		t.Fatalf("the page collected %v\nwant           %v", ids, published)
	}
	t.Logf("browser reconnected with Last-Event-ID %s after the server dropped the stream; %d ids, no gap or duplicate", connections[1], len(ids))
}
