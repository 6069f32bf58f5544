package chclients

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// killCols is the table of the SIGKILL tests.
const killCols = "id String, n UInt32"

// killRequests and killRowsPerRequest size what each client has acknowledged before the kill.
const (
	killRequests       = 5
	killRowsPerRequest = 20
)

// TestSIGKILLAfterAcknowledgement makes each client's inserts impossible to reach ClickHouse
// before the gateway dies: the gateway's private ClickHouse server is stopped, the client
// inserts (the gateway acknowledges from its durable queue), the gateway is SIGKILLed, then
// ClickHouse and the gateway come back and every acknowledged row must be in the table exactly
// once.
func TestSIGKILLAfterAcknowledgement(t *testing.T) {
	t.Parallel()
	clients := []struct {
		name   string
		insert func(t *testing.T, tg target, table string, ids []string) error
	}{
		{"node", nodeInsertIDs},
		{"clickhouse-go", goInsertIDs},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			ch := testsvc.StartClickHouse(t)
			db := testsvc.UniqueName(t, "chk")
			if _, err := ch.Query(t.Context(), "CREATE DATABASE "+db); err != nil {
				t.Fatal(err)
			}
			g := startGateway(t, &ch.ClickHouse, db)
			tg := g.target()
			const table = "killed"
			tg.createTable(t, table, killCols)
			// One row through the gateway while ClickHouse is up, so that it knows the table.
			if err := c.insert(t, tg, table, []string{"warm"}); err != nil {
				t.Fatalf("insert before the outage: %v", err)
			}
			tg.landed(t, table, 1)

			ch.Stop(t)
			acked := []string{"warm"}
			for r := range killRequests {
				ids := make([]string, killRowsPerRequest)
				for i := range ids {
					ids[i] = fmt.Sprintf("r%d-%d", r, i)
				}
				if err := c.insert(t, tg, table, ids); err != nil {
					t.Fatalf("insert %d while ClickHouse is down (the gateway should queue it durably): %v", r, err)
				}
				acked = append(acked, ids...)
			}
			g.proc.Kill(t)
			ch.Start(t)
			g.proc.Start(t)

			want := len(acked)
			poll.Until(t, drainTimeout, "every acknowledged row in ClickHouse after the restart", func() bool {
				return tg.count(t, table) >= want
			})
			// The rows inserted since the restart are the ones acknowledged before the kill.
			poll.Until(t, drainTimeout, "the restarted gateway to insert the queued rows", func() bool {
				return gatewaybin.MetricSum(t, g.proc.OpsURL(), "wavehouse_ingest_rows_inserted_total") >= float64(want-1)
			})
			out := strings.Fields(tg.sql(t, fmt.Sprintf("SELECT count(), uniqExact(id) FROM %s.%s", db, table)))
			if len(out) != 2 || out[0] != fmt.Sprint(want) || out[1] != fmt.Sprint(want) {
				t.Fatalf("table holds count, distinct ids = %v, want %d and %d: every acknowledged row exactly once", out, want, want)
			}
			missing := tg.sql(t, fmt.Sprintf("SELECT count() FROM %s.%s WHERE id IN (%s)", db, table, quoteList(acked)))
			if strings.TrimSpace(missing) != fmt.Sprint(want) {
				t.Fatalf("%s of %d acknowledged ids are in the table", strings.TrimSpace(missing), want)
			}
		})
	}
}

// nodeInsertIDs inserts one row per id with the Node client's insert() (JSONEachRow).
func nodeInsertIDs(t *testing.T, tg target, table string, ids []string) error {
	t.Helper()
	rows := make([]map[string]any, len(ids))
	for i, id := range ids {
		rows[i] = map[string]any{"id": id, "n": i}
	}
	b, _ := json.Marshal(rows)
	r := tg.node(t, "insert_json.mjs", b, "CH_TABLE="+table)
	if r.Error != nil {
		return fmt.Errorf("%s", r.Error)
	}
	return nil
}

// goInsertIDs inserts one row per id with clickhouse-go's PrepareBatch/Append/Send, naming the
// columns' types itself (WithColumnNamesAndTypes) so the batch needs no DESCRIBE TABLE, which
// the gateway can only answer with ClickHouse up.
func goInsertIDs(t *testing.T, tg target, table string, ids []string) error {
	t.Helper()
	conn := openHTTP(t, tg, nil)
	ctx := clickhouse.Context(t.Context(), clickhouse.WithColumnNamesAndTypes([]clickhouse.ColumnNameAndType{
		{Name: "id", Type: "String"}, {Name: "n", Type: "UInt32"},
	}))
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+table+" (id, n)")
	if err != nil {
		return fmt.Errorf("PrepareBatch: %w", err)
	}
	for i, id := range ids {
		if err := b.Append(id, uint32(i)); err != nil {
			return fmt.Errorf("Append: %w", err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("Send: %w", err)
	}
	return conn.Close()
}

// quoteList renders ids as a SQL list of string literals.
func quoteList(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = "'" + strings.ReplaceAll(id, "'", "\\'") + "'"
	}
	return strings.Join(q, ", ")
}
