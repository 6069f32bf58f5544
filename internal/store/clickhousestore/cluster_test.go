package clickhousestore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// clusterDB creates a database with a ReplicatedMergeTree table t (id UInt64, s String) on every
// node of the cluster (the ZooKeeper path and replica name from the macros) and a Distributed
// table t_all over it, sharded by id. It returns the database name. The DDL runs on each node
// rather than ON CLUSTER: quicker, and an 18.16 node that has just started can crash on ON
// CLUSTER DDL (a NULL ZooKeeper handle in the DDL queue), which private clusters hit.
func clusterDB(t *testing.T, c *testsvc.ClickHouseCluster) string {
	t.Helper()
	db := testsvc.UniqueName(t, "cluster")
	t.Cleanup(func() {
		for _, n := range c.Nodes() {
			_, _ = n.Query(context.Background(), "DROP DATABASE IF EXISTS "+db)
		}
	})
	for _, q := range []string{
		"CREATE DATABASE " + db,
		fmt.Sprintf("CREATE TABLE %[1]s.t (id UInt64, s String) "+
			"ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/%[1]s.t', '{replica}') ORDER BY id", db),
		fmt.Sprintf("CREATE TABLE %[1]s.t_all AS %[1]s.t ENGINE = Distributed(%[2]s, %[1]s, t, id)", db, c.Name),
	} {
		onEveryNode(t, c, q)
	}
	return db
}

// scalar runs sql on node and returns the trimmed answer.
func scalar(t *testing.T, node *testsvc.ClickHouse, sql string) string {
	t.Helper()
	out, err := node.Query(t.Context(), sql)
	if err != nil {
		t.Fatalf("%s on %s: %v", sql, node.HTTPAddr, err)
	}
	return strings.TrimSpace(out)
}

// rows returns canonical rows [id, "s<id><suffix>"] for ids lo … hi-1.
func rows(lo, hi int, suffix string) [][]byte {
	out := make([][]byte, 0, hi-lo)
	for id := lo; id < hi; id++ {
		out = append(out, fmt.Appendf(nil, `[%d,"s%d%s"]`, id, id, suffix))
	}
	return out
}

// insert sends one batch through the store to the node at addr.
func insert(t *testing.T, addr, db string, rs [][]byte) {
	t.Helper()
	s := newStore(t, addr)
	defer func() { _ = s.Close(context.Background()) }()
	if err := s.Insert(t.Context(), store.Batch{Target: store.Target{Database: db}, Table: "t", Columns: []string{"id", "s"}, Rows: rs}); err != nil {
		t.Fatalf("insert into %s: %v", addr, err)
	}
}

// syncReplicas waits until every replica has fetched what the others wrote (SYSTEM SYNC REPLICA).
func syncReplicas(t *testing.T, c *testsvc.ClickHouseCluster, db string) {
	t.Helper()
	for _, n := range c.Nodes() {
		scalar(t, n, "SYSTEM SYNC REPLICA "+db+".t")
	}
}

// TestClusterReplicatesAndDistributes: the 2 × 2 cluster is real. Rows written through the store
// to one replica of each shard are on both replicas of that shard and on no node of the other
// shard, and the Distributed table counts the rows of both shards.
func TestClusterReplicatesAndDistributes(t *testing.T) {
	c := testsvc.ClickHouseClusterServers(t)
	db := clusterDB(t, c)
	insert(t, c.Shards[0][0].NativeAddr, db, rows(0, 300, ""))
	insert(t, c.Shards[1][1].NativeAddr, db, rows(1000, 1200, ""))
	syncReplicas(t, c, db)
	want := []string{"300\t0\t299", "200\t1000\t1199"}
	for s, shard := range c.Shards {
		for r := range shard {
			got := scalar(t, &shard[r], "SELECT count(), min(id), max(id) FROM "+db+".t FORMAT TabSeparated")
			if got != want[s] {
				t.Errorf("shard %d replica %d holds count, min, max = %q, want %q", s+1, r+1, got, want[s])
			}
		}
	}
	for _, n := range c.Nodes() {
		if got := scalar(t, n, "SELECT count() FROM "+db+".t_all"); got != "500" {
			t.Errorf("%s: Distributed count() = %s, want 500", n.HTTPAddr, got)
		}
	}
}

// TestReplicatedBlockDeduplication: ClickHouse 18.16 has no insert_deduplication_token, but a
// Replicated table drops a block whose content it has stored before (the checksum of the part,
// kept in ZooKeeper for the last replicated_deduplication_window blocks of the shard). The
// identical batch sent again through the store — to the same replica and to the other one — is
// stored once; the batch with one byte changed is stored; the other shard keeps its own log.
func TestReplicatedBlockDeduplication(t *testing.T) {
	c := testsvc.ClickHouseClusterServers(t)
	db := clusterDB(t, c)
	s1r1, s1r2 := c.Shards[0][0].NativeAddr, c.Shards[0][1].NativeAddr
	block := rows(0, 100, "")
	insert(t, s1r1, db, block)
	insert(t, s1r1, db, block)
	insert(t, s1r2, db, block)
	syncReplicas(t, c, db)
	if got := scalar(t, &c.Shards[0][0], "SELECT count() FROM "+db+".t"); got != "100" {
		t.Fatalf("the same block inserted three times into shard 1: count() = %s, want 100", got)
	}
	changed := rows(0, 100, "")
	changed[99] = []byte(`[99,"s98"]`) // one byte differs from the first block
	insert(t, s1r1, db, changed)
	insert(t, c.Shards[1][0].NativeAddr, db, block)
	syncReplicas(t, c, db)
	for r := range c.Shards[0] {
		if got := scalar(t, &c.Shards[0][r], "SELECT count(), uniqExact(id) FROM "+db+".t FORMAT TabSeparated"); got != "200\t100" {
			t.Errorf("shard 1 replica %d after a block differing in one byte: count, ids = %q, want 200 rows of 100 ids", r+1, got)
		}
	}
	if got := scalar(t, &c.Shards[1][1], "SELECT count() FROM "+db+".t"); got != "100" {
		t.Errorf("shard 2 (its own deduplication log): count() = %s, want 100", got)
	}
	if got := scalar(t, &c.Shards[0][1], "SELECT count() FROM "+db+".t_all"); got != "300" {
		t.Errorf("Distributed count() = %s, want 300", got)
	}
}

// TestInsertDeduplicatedOnReplicated1816: the store reports a Replicated table as deduplicating
// inserts on 18.16 (by block checksum, there being no token), a plain MergeTree as not.
func TestInsertDeduplicatedOnReplicated1816(t *testing.T) {
	c := testsvc.ClickHouseClusterServers(t)
	db := clusterDB(t, c)
	n := &c.Shards[0][0]
	scalar(t, n, "CREATE TABLE "+db+".plain (id UInt64) ENGINE = MergeTree ORDER BY id")
	scalar(t, n, "CREATE TABLE "+db+".nowindow (id UInt64) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/"+db+".nowindow', '{replica}') "+
		"ORDER BY id SETTINGS replicated_deduplication_window = 0")
	s := newStore(t, n.NativeAddr)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	for table, want := range map[string]bool{"t": true, "plain": false, "nowindow": false} {
		got, err := s.InsertDeduplicated(t.Context(), store.Target{Database: db}, table)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("InsertDeduplicated(%s) = %v, want %v", table, got, want)
		}
	}
}

func itoa(n int64) string { return fmt.Sprint(n) }

func atoi(s string) int {
	var n int
	_, _ = fmt.Sscan(s, &n)
	return n
}
