package idempotency

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// TestKeyNewAgainAfterRetention requires a key whose recorded response has expired to be new
// again: a request reusing it with another body is processed and its rows land in ClickHouse.
// With the default retention (24 h) the queue's 2 min duplicate window has long passed by then;
// this test uses a 1 s retention, inside that window, so the second publish must not be taken
// for a duplicate of the first (the queue message id folds in the body fingerprint).
func TestKeyNewAgainAfterRetention(t *testing.T) {
	g := newGateway(t, backends{}, func(c *gatewayConfig) { c.Retention = "1s" })
	const table = "expiry"
	g.sql(t, fmt.Sprintf(eventsDDL, table))
	key := "expiry-" + testUniqueSuffix()
	first, err := g.ingest(t.Context(), table, key, "", keyedBody("first", 0))
	if err != nil || first.Status != http.StatusAccepted || replayed(first) {
		t.Fatalf("first request: %v %s", err, first)
	}
	var second gatewaybin.Response
	poll.Until(t, 30*time.Second, "the key to expire", func() bool {
		second, err = g.ingest(t.Context(), table, key, "", keyedBody("second", 0))
		return err == nil && second.Status != http.StatusUnprocessableEntity
	})
	if second.Status != http.StatusAccepted || replayed(second) {
		t.Fatalf("request reusing the expired key: %s (replayed=%v), want a new 202", second, replayed(second))
	}
	g.settled(t, table, 2)
	ids := g.ids(t, table)
	for _, id := range []string{"first0-a", "first0-b", "second0-a", "second0-b"} {
		if !ids[id] {
			t.Errorf("row %s is missing (first answer %s, second %s)", id, first, second)
		}
	}
}
