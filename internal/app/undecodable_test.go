package app

import (
	"bufio"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// TestUndecodableMessageEndToEnd: bytes that are no frame, stored on a table's ingest subject
// between two accepted requests, end in the dead-letter queue with code undecodable and their raw
// bytes (GET /v1/ops/dlq/{table}), move wavehouse_mq_undecodable_total, and reach an SSE
// subscriber as a gap between the two rows, which are both inserted.
func TestUndecodableMessageEndToEnd(t *testing.T) {
	cfg := testConfig(t)
	cfg.Ingest.Flush.MaxWait = config.Duration(50 * time.Millisecond)
	a := startApp(t, cfg)
	base := "http://" + a.APIAddr()
	if r := opsCall(t, a, "POST", "/v1/ops/sql", `{"sql":"CREATE TABLE junk (id UInt64) ENGINE = MergeTree ORDER BY id"}`); r.code != 200 {
		t.Fatalf("create: %d %s", r.code, r.raw)
	}
	resp, err := http.Get(base + "/v1/stream/junk?since=0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "event: ") || strings.HasPrefix(line, "data: ") {
				events <- line
			}
		}
	}()

	if r := call(t, "POST", base+"/v1/ingest/junk?wait=committed", "application/json", `{"id":1}`); r.code != 200 {
		t.Fatalf("ingest: %d %s", r.code, r.raw)
	}
	jq, err := a.queue.(*embeddedmq.Queue).Handle.Queue()
	if err != nil {
		t.Fatal(err)
	}
	garbage := []byte("\x00\xffjunk")
	msg := nats.NewMsg(jq.Names().Subject(auth.DefaultAnonymousTenant, "junk"))
	msg.Data = garbage
	if _, err := jq.JetStream().PublishMsg(t.Context(), msg); err != nil {
		t.Fatal(err)
	}
	if r := call(t, "POST", base+"/v1/ingest/junk?wait=committed", "application/json", `{"id":2}`); r.code != 200 {
		t.Fatalf("ingest after the garbage: %d %s", r.code, r.raw)
	}
	if q := call(t, "POST", base+"/v1/query", "application/json", `{"sql":"SELECT count() AS c FROM junk"}`); !strings.Contains(q.raw, `"c":2`) {
		t.Fatalf("rows around the garbage: %s", q.raw)
	}
	var dl reply
	poll.Until(t, 20*time.Second, "the undecodable message dead-lettered", func() bool {
		dl = opsCall(t, a, "GET", "/v1/ops/dlq/junk", "")
		return strings.Contains(dl.raw, `"code":"undecodable"`)
	})
	if !strings.Contains(dl.raw, `"data_base64":"`+base64.StdEncoding.EncodeToString(garbage)+`"`) || !strings.Contains(dl.raw, `"subject":"`+msg.Subject+`"`) {
		t.Fatalf("dead letter lacks the raw message: %s", dl.raw)
	}
	_, metrics := get(t, "http://"+a.OpsAddr()+"/metrics")
	var counted bool
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "wavehouse_mq_undecodable_total{") && strings.HasSuffix(line, " 1") {
			counted = true
		}
	}
	if !counted {
		t.Fatalf("metrics lack wavehouse_mq_undecodable_total 1")
	}

	var got []string
	deadline := time.After(20 * time.Second)
	for len(got) < 6 {
		select {
		case line, ok := <-events:
			if !ok {
				t.Fatalf("stream ended after %q", got)
			}
			got = append(got, line)
		case <-deadline:
			t.Fatalf("stream events %q, want rows, gap, rows", got)
		}
	}
	if got[0] != "event: rows" || got[1] != `data: [{"id":"1"}]` && got[1] != `data: [{"id":1}]` ||
		got[2] != "event: gap" || !strings.Contains(got[3], `"reason":"undecodable"`) || got[4] != "event: rows" {
		t.Fatalf("stream events %q, want rows 1, gap, rows 2", got)
	}
}
