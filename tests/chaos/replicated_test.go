package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/ingest/writer"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestChaosReplicatedSIGKILL kills the all-in-one process (embedded queue) with SIGKILL at random
// moments under sustained unkeyed and keyed ingest into a Distributed table over
// ReplicatedMergeTree tables on the 2 × 2 ClickHouse 18.16 cluster, the store in cluster insert
// mode local: the gateway routes each row by the sharding key to its shard's local table. 18.16
// has no insert_deduplication_token; what must make it exactly once is the writer rebuilding an
// in-doubt batch byte-identically, so that the routing splits it into the same per-shard blocks
// and each shard drops its repeated block by checksum. Rows are counted per id through the
// Distributed table over both shards, after both replicas of each shard are checked to hold the
// same rows.
func TestChaosReplicatedSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: skipped under -short")
	}
	c := testsvc.ClickHouseClusterServers(t)
	db := testsvc.UniqueName(t, "chaos_repl")
	p, tg := startAllInOne(t, clusterStoreYAML(t, c, db))
	tg.read = readReplicated(c, db)
	tg.create = createSharded(c, db)
	// Odd faults are an external SIGKILL at a random moment; even ones restart the process with
	// --fault-kill-after (the suite's binary is the fault build), which SIGKILLs it right after the inserts of its crashBatch-th
	// batch and before the plan is marked: an in-doubt batch for certain, which the next life
	// must rebuild and insert again — and the table must drop.
	faults := 0
	runScenario(t, "all-in-one, ClickHouse 18.16 ReplicatedMergeTree (2 × 2 cluster, insert: local): SIGKILL the process", "chaos_replicated", tg, fault{
		name: "SIGKILL all-in-one (odd: at random; even: between insert and mark)",
		inject: func(t *testing.T, _ *rand.Rand) {
			faults++
			tg.writer.bank(t.Context())
			tg.reserves.bank(t.Context())
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

// TestChaosClusterShardDown stops both replicas of shard 2 of a private 2 × 2 cluster (SIGKILL)
// under sustained ingest through the gateway in insert mode local, and starts them again after
// the writer has been retrying: the shard's rows wait in the queue — nothing goes to the
// dead-letter queue — and land when it returns, each once.
func TestChaosClusterShardDown(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: skipped under -short")
	}
	cp, tg := startOnPrivateCluster(t, "chaos_shard")
	runScenario(t, "all-in-one, 2 × 2 cluster (insert: local): shard 2 fully down, then back", "chaos_shard_down", tg, fault{
		name: "SIGKILL both replicas of shard 2",
		inject: func(t *testing.T, _ *rand.Rand) {
			before, err := scrape(t.Context(), tg.ops)
			if err != nil {
				t.Fatal(err)
			}
			cp.Servers[1][0].Kill(t)
			cp.Servers[1][1].Kill(t)
			retries := before.sum("wavehouse_ingest_retries_total")
			poll.Until(t, progressTimeout, "the writer retrying inserts while shard 2 is down", func() bool {
				m, err := scrape(t.Context(), tg.ops)
				return err == nil && m.sum("wavehouse_ingest_retries_total") >= retries+3
			})
			if m, err := scrape(t.Context(), tg.ops); err != nil || m.sum(metricDLQ) != 0 {
				t.Errorf("with shard 2 down: DLQ entries %v (error %v), want 0: its rows must wait in the queue", m.sum(metricDLQ), err)
			}
			cp.Servers[1][0].Start(t)
			cp.Servers[1][1].Start(t)
		},
	})
}

// TestChaosClusterReplicaKill SIGKILLs one replica of a shard of a private 2 × 2 cluster at a
// random moment under sustained ingest through the gateway in insert mode local, keeps it down
// for a random while and starts it again: inserts fail over to the other replica of the shard
// (rows keep landing while it is down, nothing is dead-lettered), every acknowledged row is stored
// once, and the restarted replica catches up.
func TestChaosClusterReplicaKill(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: skipped under -short")
	}
	cp, tg := startOnPrivateCluster(t, "chaos_replica")
	runScenario(t, "all-in-one, 2 × 2 cluster (insert: local): SIGKILL one replica", "chaos_replica_kill", tg, fault{
		name: "SIGKILL one replica",
		inject: func(t *testing.T, rng *rand.Rand) {
			n := cp.Servers[rng.IntN(len(cp.Servers))][rng.IntN(2)]
			before, err := scrape(t.Context(), tg.ops)
			if err != nil {
				t.Fatal(err)
			}
			n.Kill(t)
			// Fail-over, not waiting: rows keep landing while the replica is down.
			inserted := before.sum("wavehouse_ingest_rows_inserted_total")
			poll.Until(t, progressTimeout, "rows inserted while one replica is down", func() bool {
				m, err := scrape(t.Context(), tg.ops)
				return err == nil && m.sum("wavehouse_ingest_rows_inserted_total") > inserted+1000
			})
			wait(t, between(rng, minOutage, maxOutage))
			if m, err := scrape(t.Context(), tg.ops); err != nil || m.sum(metricDLQ) != 0 {
				t.Errorf("with a replica down: DLQ entries %v (error %v), want 0", m.sum(metricDLQ), err)
			}
			n.Start(t)
		},
	})
}

// startOnPrivateCluster starts a private 2 × 2 cluster (its servers are the test's to kill) and
// the all-in-one gateway ingesting into it in insert mode local, in a database named after prefix,
// with the target reading and creating sharded tables there.
func startOnPrivateCluster(t *testing.T, prefix string) (*testsvc.ClickHouseClusterProcess, target) {
	t.Helper()
	cp := testsvc.StartClickHouseCluster(t)
	c := &cp.ClickHouseCluster
	db := testsvc.UniqueName(t, prefix)
	_, tg := startAllInOne(t, clusterStoreYAML(t, c, db))
	tg.read = readReplicated(c, db)
	tg.create = createSharded(c, db)
	return cp, tg
}

// clusterStoreYAML is the store section for the cluster in insert mode local with db as the
// default tenant's database, which it creates on every node.
func clusterStoreYAML(t *testing.T, c *testsvc.ClickHouseCluster, db string) string {
	t.Helper()
	onEveryNode(t, c, "CREATE DATABASE "+db)
	t.Cleanup(func() {
		for _, n := range c.Nodes() {
			_, _ = n.Query(context.Background(), "DROP DATABASE IF EXISTS "+db)
		}
	})
	var shards strings.Builder
	for _, shard := range c.Shards {
		shards.WriteString("        - replicas: [")
		for r := range shard {
			if r > 0 {
				shards.WriteString(", ")
			}
			fmt.Fprintf(&shards, "%q", shard[r].NativeAddr)
		}
		shards.WriteString("]\n")
	}
	return fmt.Sprintf("  backend: clickhouse\n  clickhouse:\n    database: %s\n    cluster:\n      name: %s\n      insert: local\n      shards:\n%s",
		db, c.Name, shards.String())
}

// createSharded creates, on every node, the ReplicatedMergeTree table <table>_local and the
// Distributed table <table> over it, sharded by intHash64(id): the gateway ingests into the
// Distributed table. The DDL runs on each node rather than ON CLUSTER (an 18.16 node that has
// just started can crash on ON CLUSTER DDL, which a private cluster hits).
func createSharded(c *testsvc.ClickHouseCluster, db string) func(t *testing.T, table string) {
	return func(t *testing.T, table string) {
		onEveryNode(t, c, fmt.Sprintf("CREATE TABLE %[1]s.%[2]s_local (id UInt64, k UInt8) "+
			"ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/%[1]s.%[2]s', '{replica}') ORDER BY id", db, table))
		onEveryNode(t, c, fmt.Sprintf("CREATE TABLE %[1]s.%[2]s AS %[1]s.%[2]s_local "+
			"ENGINE = Distributed(%[3]s, %[1]s, %[2]s_local, intHash64(id))", db, table, c.Name))
	}
}

// onEveryNode runs DDL on each node of the cluster.
func onEveryNode(t *testing.T, c *testsvc.ClickHouseCluster, sql string) {
	t.Helper()
	for _, n := range c.Nodes() {
		clusterSQL(t, n, sql)
	}
}

// replicaCatchUp bounds how long the replicas of a shard may take to agree after the faults.
const replicaCatchUp = 3 * time.Minute

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

// readReplicated syncs every replica of <table>_local, requires both replicas of each shard to
// hold the same number of rows, and reads per request through the Distributed table <table>.
func readReplicated(c *testsvc.ClickHouseCluster, db string) reader {
	return func(t *testing.T, table string) map[uint64]stored {
		t.Helper()
		// A replica restarted after a SIGKILL fetches the parts it missed from its peer; SYNC
		// REPLICA waits only for the entries it already pulled, so the counts are polled until
		// they agree (they must, within replicaCatchUp) before the rows are read.
		var counts [][]string
		poll.Until(t, replicaCatchUp, "the replicas of each shard to hold the same rows", func() bool {
			for _, n := range c.Nodes() {
				if _, err := n.Query(t.Context(), "SYSTEM SYNC REPLICA "+db+"."+table+"_local"); err != nil {
					return false
				}
			}
			counts = counts[:0]
			same := true
			for _, shard := range c.Shards {
				var cs []string
				for r := range shard {
					out, err := shard[r].Query(t.Context(), "SELECT count() FROM "+db+"."+table+"_local")
					if err != nil {
						return false
					}
					cs = append(cs, strings.TrimSpace(out))
					same = same && cs[r] == cs[0]
				}
				counts = append(counts, cs)
			}
			return same
		})
		for s, cs := range counts {
			t.Logf("shard %d: rows per replica %v", s+1, cs)
		}
		return readFromServer(&c.Shards[0][1], db)(t, table)
	}
}
