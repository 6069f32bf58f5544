package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/ingest/writer"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestChaosReplicatedSIGKILL kills the all-in-one process (embedded queue) with SIGKILL at random
// moments under sustained unkeyed and keyed ingest into a ReplicatedMergeTree table on the 2 × 2
// ClickHouse 18.16 cluster, the store pointing at one replica of shard 1. 18.16 has no
// insert_deduplication_token; what must make it exactly once is the writer rebuilding an in-doubt
// batch byte-identically, so that the table drops the repeated block by its checksum. Rows are
// counted per id through a Distributed table over both shards, after both replicas of shard 1
// are checked to hold the same rows.
func TestChaosReplicatedSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: skipped under -short")
	}
	c := testsvc.ClickHouseClusterServers(t)
	s1r1 := &c.Shards[0][0]
	db := testsvc.UniqueName(t, "chaos_repl")
	clusterSQL(t, s1r1, fmt.Sprintf("CREATE DATABASE %s ON CLUSTER %s", db, c.Name))
	t.Cleanup(func() {
		_, _ = s1r1.Query(context.Background(), fmt.Sprintf("DROP DATABASE IF EXISTS %s ON CLUSTER %s", db, c.Name))
	})
	p, tg := startAllInOne(t, fmt.Sprintf("  backend: clickhouse\n  clickhouse:\n    addrs: [%q]\n    http_addrs: [%q]\n    database: %s\n", s1r1.NativeAddr, s1r1.HTTPAddr, db))
	tg.read = readReplicated(c, db)
	tg.create = func(t *testing.T, table string) {
		clusterSQL(t, s1r1, fmt.Sprintf("CREATE TABLE %[1]s.%[2]s ON CLUSTER %[3]s (id UInt64, k UInt8) "+
			"ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/%[1]s.%[2]s', '{replica}') ORDER BY id", db, table, c.Name))
		clusterSQL(t, s1r1, fmt.Sprintf("CREATE TABLE %[1]s.%[2]s_all ON CLUSTER %[3]s AS %[1]s.%[2]s "+
			"ENGINE = Distributed(%[3]s, %[1]s, %[2]s, id)", db, table, c.Name))
	}
	// Odd faults are an external SIGKILL at a random moment; even ones restart the process with
	// --fault-kill-after (the suite's binary is the fault build), which SIGKILLs it right after the inserts of its crashBatch-th
	// batch and before the plan is marked: an in-doubt batch for certain, which the next life
	// must rebuild and insert again — and the table must drop.
	faults := 0
	runScenario(t, "all-in-one, ClickHouse 18.16 ReplicatedMergeTree (2 × 2 cluster): SIGKILL the process", "chaos_replicated", tg, fault{
		name: "SIGKILL all-in-one (odd: at random; even: between insert and mark)",
		inject: func(t *testing.T, _ *rand.Rand) {
			faults++
			tg.writer.bank(t.Context())
			p.Kill(t)
			if faults%2 == 0 {
				p.SetArgs(fmt.Sprintf("--fault-kill-after=%s:%d", writer.FaultInserted, crashBatch))
				p.Start(t)
				p.MustExit(t, crashExitTimeout)
				p.SetArgs()
			}
			p.Start(t)
		},
	})
	if faults >= 2 && tg.writer.total(t.Context())["reinserted_deduplicated"] == 0 {
		t.Errorf("no in-doubt batch was re-inserted although the writer was killed between an insert and its mark")
	}
}

// crashBatch is the batch after whose inserts --fault-kill-after kills the process; a few batches
// in, so the redelivered frames of the previous life are settled first.
const crashBatch = 3

// crashExitTimeout bounds how long the hooked process may take to reach its crashBatch-th batch.
const crashExitTimeout = 90 * time.Second

// clusterSQL runs DDL on a cluster node, failing the test on error.
func clusterSQL(t *testing.T, n *testsvc.ClickHouse, sql string) {
	t.Helper()
	if _, err := n.Query(t.Context(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// readReplicated syncs every replica of the table, requires both replicas of each shard to hold
// the same number of rows, and reads per request through the Distributed table <table>_all.
func readReplicated(c *testsvc.ClickHouseCluster, db string) reader {
	return func(t *testing.T, table string) map[uint64]stored {
		t.Helper()
		for _, n := range c.Nodes() {
			clusterSQL(t, n, "SYSTEM SYNC REPLICA "+db+"."+table)
		}
		for s, shard := range c.Shards {
			var counts []string
			for r := range shard {
				out, err := shard[r].Query(t.Context(), "SELECT count() FROM "+db+"."+table)
				if err != nil {
					t.Fatal(err)
				}
				counts = append(counts, strings.TrimSpace(out))
			}
			t.Logf("shard %d: rows per replica %v", s+1, counts)
			for _, n := range counts[1:] {
				if n != counts[0] {
					t.Errorf("shard %d: replicas hold different row counts %v after SYNC REPLICA", s+1, counts)
				}
			}
		}
		return readFromServer(&c.Shards[0][1], db)(t, table+"_all")
	}
}
