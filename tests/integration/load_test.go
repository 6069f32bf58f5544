package integration

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// ackLog records the ids of every row that got a 2xx.
type ackLog struct {
	mu       sync.Mutex
	ids      map[string]struct{}
	requests int
}

func (a *ackLog) add(ids []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range ids {
		a.ids[id] = struct{}{}
	}
	a.requests++
}

func (a *ackLog) snapshot() (rows, requests int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ids), a.requests
}

// requireAllAcked waits until every acknowledged row is in the table, failing with the missing
// ones when the deadline passes.
func requireAllAcked(t *testing.T, r rowReader, table string, acks *ackLog) {
	t.Helper()
	var missing []string
	deadline := time.Now().Add(120 * time.Second)
	for {
		present := map[string]bool{}
		for _, row := range r.selectRows(t, "SELECT DISTINCT id FROM {table}", table) {
			present[row["id"].(string)] = true
		}
		missing = missing[:0]
		acks.mu.Lock()
		for id := range acks.ids {
			if !present[id] {
				missing = append(missing, id)
			}
		}
		total := len(acks.ids)
		acks.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			sort.Strings(missing)
			t.Fatalf("%d of %d acknowledged rows are not in the table, e.g. %v", len(missing), total, missing[:min(10, len(missing))])
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// loadClient posts requests of unique rows until ctx ends, recording the acknowledged ones.
// Errors are expected while the gateway is down; they are not acknowledgements.
func loadClient(ctx context.Context, g *gateway, table, prefix string, worker, rowsPerRequest int, acks *ackLog) {
	for seq := 0; ctx.Err() == nil; seq++ {
		ids := make([]string, rowsPerRequest)
		var b strings.Builder
		for j := range ids {
			ids[j] = fmt.Sprintf("%s-%d-%d", prefix, seq, j)
			fmt.Fprintf(&b, "{\"id\":%q,\"worker\":%d,\"n\":%d}\n", ids[j], worker, seq)
		}
		resp, err := g.client.Try(ctx, http.MethodPost, "/v1/ingest/"+table, http.Header{"Content-Type": {ctNDJSON}}, []byte(b.String()))
		if err == nil && resp.Status/100 == 2 {
			acks.add(ids)
		}
		if err != nil {
			// The gateway is gone; do not spin.
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}
