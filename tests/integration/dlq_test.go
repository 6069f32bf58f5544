package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// TestPoisonRowDeadLettered sends a batch of good rows plus one record that passes validation but
// fails at insert (a CHECK constraint the gateway does not evaluate): the good rows arrive, only
// the poison record is dead-lettered with its reason, and after the table is fixed a replay
// delivers it and empties the DLQ. Constraints need a modern engine, so this runs on chDB, over
// both queue backends.
func TestPoisonRowDeadLettered(t *testing.T) {
	for _, mqBackend := range []string{mqEmbedded, mqNATS} {
		t.Run(storeCHDB+"/"+mqBackend, func(t *testing.T) {
			g := backendGateway(t, storeCHDB, mqBackend, func(c *gatewayConfig) { c.FlushMaxWait = "1s" })
			r := readerFor(g)
			const table = "poison"
			g.sql(t, "CREATE TABLE "+table+" (id String, p UInt8, CONSTRAINT small CHECK p < 10) ENGINE = MergeTree() ORDER BY id")

			// Good requests, then the poison one, inside one flush window so they share a batch.
			const requests, perRequest = 10, 5
			for i := range requests {
				var rows []string
				for j := range perRequest {
					rows = append(rows, fmt.Sprintf(`{"id":"good-%02d-%d","p":%d}`, i, j, j))
				}
				if resp := g.ingest(t, table, "", ctNDJSON, []byte(strings.Join(rows, "\n"))); resp.Status != http.StatusAccepted {
					t.Fatalf("good request %d: %s", i, resp)
				}
			}
			resp := g.ingest(t, table, "wait=committed", ctJSON, []byte(`{"id":"poison","p":42}`))
			var pr struct {
				Committed    *bool `json:"committed"`
				DeadLettered bool  `json:"dead_lettered"`
			}
			resp.JSON(t, &pr)
			if resp.Status != http.StatusAccepted || pr.Committed == nil || *pr.Committed || !pr.DeadLettered {
				t.Fatalf("poison with wait=committed: %s, want 202 committed false dead_lettered true", resp)
			}

			poll.Until(t, 30*time.Second, "the good rows", func() bool { return count(t, r, table) == requests*perRequest })
			if n := len(r.selectRows(t, "SELECT id FROM {table} WHERE id = 'poison'", table)); n != 0 {
				t.Fatalf("the poison row is in the table %d times", n)
			}
			if got := dlqCount(t, g, table); got != 1 {
				t.Fatalf("DLQ count of %s = %d, want 1", table, got)
			}
			entries := dlqEntries(t, g, table)
			if len(entries) != 1 {
				t.Fatalf("DLQ holds %d entries, want 1: %+v", len(entries), entries)
			}
			e := entries[0]
			if len(e.Rows) != 1 || !strings.Contains(e.Rows[0], `"poison"`) {
				t.Fatalf("DLQ entry rows %v, want only the poison row", e.Rows)
			}
			if e.Code == "" || !strings.Contains(e.Error, "small") || e.Attempts < 1 || e.FirstFailure.IsZero() || e.LastFailure.Before(e.FirstFailure) {
				t.Fatalf("DLQ entry reason %+v, want a code, the constraint in the error, attempts and failure times", e)
			}

			// Still invalid for the table's columns? No: a dry run reports it replayable.
			dry := g.ops(t, http.MethodPost, "/v1/ops/dlq/"+table+"/replay?dry_run=true")
			if dry.Status != http.StatusOK || !strings.Contains(string(dry.Body), `"entries":1`) {
				t.Fatalf("dry run: %s", dry)
			}
			if got := dlqCount(t, g, table); got != 1 {
				t.Fatalf("after a dry run the DLQ count is %d, want 1", got)
			}

			// Fix the table, replay: the row arrives and the DLQ empties.
			g.sql(t, "ALTER TABLE "+table+" DROP CONSTRAINT small")
			rep := g.ops(t, http.MethodPost, "/v1/ops/dlq/"+table+"/replay")
			if rep.Status != http.StatusOK || !strings.Contains(string(rep.Body), `"replayed":1`) {
				t.Fatalf("replay: %s, want 200 with replayed 1", rep)
			}
			poll.Until(t, 30*time.Second, "the replayed row", func() bool {
				return len(r.selectRows(t, "SELECT id FROM {table} WHERE id = 'poison' AND p = 42", table)) == 1
			})
			poll.Until(t, 30*time.Second, "an empty DLQ", func() bool { return dlqCount(t, g, table) == 0 && len(dlqEntries(t, g, table)) == 0 })
			if got := count(t, r, table); got != requests*perRequest+1 {
				t.Fatalf("%d rows after the replay, want %d", got, requests*perRequest+1)
			}
		})
	}
}

// deadEntry is one entry of GET /v1/ops/dlq/{table}.
type deadEntry struct {
	ID           uint64    `json:"id"`
	Code         string    `json:"code"`
	Error        string    `json:"error"`
	Attempts     int       `json:"attempts"`
	FirstFailure time.Time `json:"first_failure"`
	LastFailure  time.Time `json:"last_failure"`
	Rows         []string  `json:"-"`
	RawRows      []any     `json:"rows"`
}

func dlqEntries(t *testing.T, g *gateway, table string) []deadEntry {
	t.Helper()
	resp := g.ops(t, http.MethodGet, "/v1/ops/dlq/"+table)
	if resp.Status != http.StatusOK {
		t.Fatalf("GET dlq/%s: %s", table, resp)
	}
	var body struct {
		Entries []deadEntry `json:"entries"`
	}
	resp.JSON(t, &body)
	for i := range body.Entries {
		for _, row := range body.Entries[i].RawRows {
			body.Entries[i].Rows = append(body.Entries[i].Rows, fmt.Sprint(jsonText(row)))
		}
	}
	return body.Entries
}

// dlqCount returns the DLQ count of table from GET /v1/ops/dlq (0 when absent).
func dlqCount(t *testing.T, g *gateway, table string) int {
	t.Helper()
	resp := g.ops(t, http.MethodGet, "/v1/ops/dlq")
	if resp.Status != http.StatusOK {
		t.Fatalf("GET dlq: %s", resp)
	}
	var body struct {
		Tables []struct {
			Table string `json:"table"`
			Count int    `json:"count"`
		} `json:"tables"`
	}
	resp.JSON(t, &body)
	for _, tc := range body.Tables {
		if tc.Table == table {
			return tc.Count
		}
	}
	return 0
}
