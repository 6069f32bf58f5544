package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// requireRetryable checks a 429/503 answer: status, code, retryable and a Retry-After header.
func requireRetryable(t *testing.T, what string, resp gatewaybin.Response, status int, code string) {
	t.Helper()
	e := requireError(t, what, resp, status, code)
	if !e.Retryable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("%s: %s with Retry-After %q, want retryable with a Retry-After", what, resp, resp.Header.Get("Retry-After"))
	}
}

// TestQueueFull fills the tenant's queue budget (rows wait for a long flush window, so nothing is
// acknowledged) until ingest answers 429 with Retry-After.
func TestQueueFull(t *testing.T) {
	g := backendGateway(t, storeCHDB, mqEmbedded, func(c *gatewayConfig) {
		c.TenantMaxBytes = 8 << 10
		c.FlushMaxWait = "10m"
	})
	const table = "budget"
	g.sql(t, "CREATE TABLE "+table+" (id String, s String) ENGINE = MergeTree() ORDER BY id")
	pad := strings.Repeat("x", 1000)
	for i := range 100 {
		resp := g.ingest(t, table, "", ctJSON, []byte(fmt.Sprintf(`{"id":"q%d","s":%q}`, i, pad)))
		switch resp.Status {
		case http.StatusAccepted:
			continue
		case http.StatusTooManyRequests:
			if i == 0 {
				t.Fatalf("the first request was refused: %s", resp)
			}
			requireRetryable(t, "queue full", resp, http.StatusTooManyRequests, "ingest.queue_full")
			return
		default:
			t.Fatalf("request %d: %s, want 202 or 429", i, resp)
		}
	}
	t.Fatalf("100 KB of unacknowledged rows were accepted under an 8 KiB tenant budget")
}

// TestQueueUnavailable stops the external NATS server under a running gateway: ingest answers
// 503 with Retry-After, and accepts again once the server is back.
func TestQueueUnavailable(t *testing.T) {
	ns := testsvc.StartNATS(t)
	g := startGateway(t, gatewayConfig{Store: storeCHDB, CHDBLib: testsvc.CHDBLib(t), MQ: mqNATS, NATSURL: ns.URL, MQPrefix: testsvc.UniqueName(t, "wh")})
	const table = "qdown"
	g.sql(t, "CREATE TABLE "+table+" (id String) ENGINE = MergeTree() ORDER BY id")
	if resp := g.ingest(t, table, "wait=committed", ctJSON, []byte(`{"id":"before"}`)); resp.Status != http.StatusOK {
		t.Fatalf("ingest before the outage: %s", resp)
	}
	ns.Stop(t)
	requireRetryable(t, "queue down", g.ingest(t, table, "", ctJSON, []byte(`{"id":"during"}`)), http.StatusServiceUnavailable, "ingest.queue_unavailable")
	ns.Start(t)
	poll.Until(t, 60*time.Second, "ingest accepted again", func() bool {
		return g.ingest(t, table, "", ctJSON, []byte(`{"id":"after"}`)).Status == http.StatusAccepted
	})
	r := readerFor(g)
	poll.Until(t, 30*time.Second, "the rows accepted after the outage", func() bool {
		return len(r.selectRows(t, "SELECT id FROM {table} WHERE id = 'after'", table)) >= 1
	})
	if n := len(r.selectRows(t, "SELECT id FROM {table} WHERE id = 'during'", table)); n != 0 {
		t.Fatalf("the refused row is in the table %d times", n)
	}
}
