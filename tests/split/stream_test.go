package split

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// readIDs follows an SSE stream and sends the id of every rows event.
func readIDs(ctx context.Context, t *testing.T, url string, ids chan<- string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Error(err)
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			t.Error(err)
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("stream %s: status %d", url, resp.StatusCode)
		return
	}
	sc := bufio.NewScanner(resp.Body)
	var id, event string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case line == "":
			if event == "rows" && id != "" {
				ids <- id
			}
			id, event = "", ""
		}
	}
}

// TestSplitStreamEveryAPISeesEveryRow: two api processes over one NATS JetStream (as the api
// user, under the generated permissions) both stream
// every row accepted through either of them, in the same order.
func TestSplitStreamEveryAPISeesEveryRow(t *testing.T) {
	b := sharedBackends(t, nil, 1)
	b.StartNATS(t, binaryPath)
	apis := []*proc{startProc(t, b, "api-1", roleAPI), startProc(t, b, "api-2", roleAPI)}
	apis[0].sql(t, "CREATE TABLE "+splitTable+" (id String, n UInt64) ENGINE = MergeTree() ORDER BY id")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	streams := make([]chan string, len(apis))
	for i, p := range apis {
		streams[i] = make(chan string, 1000)
		go readIDs(ctx, t, p.API+"/v1/stream/"+splitTable+"?since=0", streams[i])
	}
	const n = 40
	for i := range n {
		p := apis[i%2]
		body := fmt.Sprintf(`{"id":"r%d","n":%d}`, i, i)
		r, err := p.try(t.Context(), http.MethodPost, "/v1/ingest/"+splitTable, "application/json", []byte(body))
		if err != nil || r.Status != http.StatusAccepted {
			t.Fatalf("ingest through %s: %v %s", p.Name, err, r)
		}
	}
	got := make([][]string, len(apis))
	for i, ch := range streams {
		deadline := time.After(60 * time.Second)
		for len(got[i]) < n {
			select {
			case id := <-ch:
				got[i] = append(got[i], id)
			case <-deadline:
				t.Fatalf("%s streamed %d of %d rows: %v", apis[i].Name, len(got[i]), n, got[i])
			}
		}
	}
	seen := map[string]bool{}
	for _, id := range got[0] {
		if seen[id] {
			t.Fatalf("id %s streamed twice: %v", id, got[0])
		}
		seen[id] = true
	}
	if strings.Join(got[0], ",") != strings.Join(got[1], ",") {
		t.Fatalf("the api processes streamed different rows:\n%v\n%v", got[0], got[1])
	}
}
