package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestPoisonRowDeadLetteredSplit is the poison-row scenario on a ClickHouse server and external
// NATS, made deterministic by splitting the roles: an api-only process accepts good rows and one
// record carrying a column that is dropped before any ingest process runs. Then an ingest
// process starts: the good rows arrive, only the stale record is dead-lettered (unknown column),
// and once the column is back a replay delivers it and empties the DLQ.
func TestPoisonRowDeadLetteredSplit(t *testing.T) {
	ch := testsvc.ClickHouseServer(t)
	base := gatewayConfig{
		Store: storeClickHouse, MQ: mqNATS,
		CHAddr: ch.NativeAddr, CHHTTPAddr: ch.HTTPAddr, CHDatabase: ch.CreateDatabase(t, "whit"),
		NATSURL: testsvc.NATSServer(t).URL, MQPrefix: testsvc.UniqueName(t, "wh"),
		RedisAddr: testsvc.RedisServer(t).Addr, RedisPrefix: testsvc.UniqueName(t, "wh") + ":",
		NoIdempotency: true,
	}
	apiCfg := base
	apiCfg.Roles = "api"
	api := startGateway(t, apiCfg)
	r := readerFor(api)
	const table = "poison"
	api.sql(t, "CREATE TABLE "+table+" (id String, p UInt8) ENGINE = MergeTree() ORDER BY id")

	good := 0
	send := func(prefix string, n int) {
		t.Helper()
		var rows []string
		for j := range n {
			rows = append(rows, fmt.Sprintf(`{"id":"%s-%d","p":%d}`, prefix, j, j))
		}
		if resp := api.ingest(t, table, "", ctNDJSON, []byte(strings.Join(rows, "\n"))); resp.Status != http.StatusAccepted {
			t.Fatalf("ingest %s: %s", prefix, resp)
		}
		good += n
	}
	send("before", 20)
	api.sql(t, "ALTER TABLE "+table+" ADD COLUMN extra String")
	if resp := api.ingest(t, table, "", ctJSON, []byte(`{"id":"poison","p":1,"extra":"stale"}`)); resp.Status != http.StatusAccepted {
		t.Fatalf("ingest poison: %s", resp)
	}
	api.sql(t, "ALTER TABLE "+table+" DROP COLUMN extra")
	send("after", 20)
	if n := count(t, r, table); n != 0 {
		t.Fatalf("%d rows inserted with no ingest process running", n)
	}

	ingestCfg := base
	ingestCfg.Roles = "ingest"
	startGateway(t, ingestCfg)

	poll.Until(t, 60*time.Second, "the good rows", func() bool { return count(t, r, table) == good })
	poll.Until(t, 30*time.Second, "the poison record in the DLQ", func() bool { return dlqCount(t, api, table) == 1 })
	if n := len(r.selectRows(t, "SELECT id FROM {table} WHERE id = 'poison'", table)); n != 0 {
		t.Fatalf("the poison row is in the table %d times", n)
	}
	entries := dlqEntries(t, api, table)
	if len(entries) != 1 || len(entries[0].Rows) != 1 || !strings.Contains(entries[0].Rows[0], `"poison"`) {
		t.Fatalf("DLQ entries %+v, want one entry holding only the poison row", entries)
	}
	if e := entries[0]; e.Code == "" || !strings.Contains(e.Error, "extra") || e.Attempts < 1 {
		t.Fatalf("DLQ entry reason %+v, want a code and an error naming the column", e)
	}

	// While the column is missing, a replay is refused: the record is still invalid.
	if resp := api.ops(t, http.MethodPost, "/v1/ops/dlq/"+table+"/replay"); resp.Status != http.StatusConflict {
		t.Fatalf("replay before the fix: %s, want 409", resp)
	}
	api.sql(t, "ALTER TABLE "+table+" ADD COLUMN extra String")
	rep := api.ops(t, http.MethodPost, "/v1/ops/dlq/"+table+"/replay")
	if rep.Status != http.StatusOK || !strings.Contains(string(rep.Body), `"replayed":1`) {
		t.Fatalf("replay: %s, want 200 with replayed 1", rep)
	}
	poll.Until(t, 60*time.Second, "the replayed row", func() bool {
		return len(r.selectRows(t, "SELECT id FROM {table} WHERE id = 'poison' AND extra = 'stale'", table)) == 1
	})
	poll.Until(t, 30*time.Second, "an empty DLQ", func() bool { return dlqCount(t, api, table) == 0 && len(dlqEntries(t, api, table)) == 0 })
	if n := count(t, r, table); n != good+1 {
		t.Fatalf("%d rows after the replay, want %d", n, good+1)
	}
}
