package clickhousestore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// clusterStore returns a store over the cluster's shards in the given insert mode.
func clusterStore(t *testing.T, c *testsvc.ClickHouseCluster, mode string) *clickhousestore.Store {
	t.Helper()
	cl := clickhousestore.Cluster{Name: c.Name, Insert: mode}
	for _, shard := range c.Shards {
		var addrs []string
		for _, n := range shard {
			addrs = append(addrs, n.NativeAddr)
		}
		cl.Shards = append(cl.Shards, addrs)
	}
	s, err := clickhousestore.New(clickhousestore.Config{Cluster: cl}, clickhousestore.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// onEveryNode runs sql on each node of the cluster (no ON CLUSTER: quicker, and no DDL queue).
func onEveryNode(t *testing.T, c *testsvc.ClickHouseCluster, sql string) {
	t.Helper()
	for _, n := range c.Nodes() {
		scalar(t, n, sql)
	}
}

// keyRows returns rows [id, i8, s] for ids 0 … n-1: i8 runs through negative values, s holds
// multi-byte and escaped characters.
func keyRows(n int) [][]byte {
	out := make([][]byte, n)
	for id := range n {
		out[id] = fmt.Appendf(nil, `[%d,%d,"k\u00e9%d\"%s"]`, id, int8(id*37), id, strings.Repeat("x", id%7))
	}
	return out
}

// shardIDs returns, per shard, the ids the local table holds on its replicas (a Distributed
// insert writes one replica of each shard).
func shardIDs(t *testing.T, c *testsvc.ClickHouseCluster, table string) []string {
	t.Helper()
	var out []string
	for s := range c.Shards {
		var all []string
		for r := range c.Shards[s] {
			all = append(all, scalar(t, &c.Shards[s][r], "SELECT arrayStringConcat(arrayMap(x -> toString(x), arraySort(groupArray(id))), ',') FROM "+table))
		}
		out = append(out, strings.Join(all, "|"))
	}
	return out
}

// TestLocalRoutingMatchesDistributed: for every sharding key the gateway evaluates, rows the
// store routes itself (insert mode local) land on exactly the shard that the Distributed table
// chooses for the same rows (insert mode distributed, the server's own selector), and both
// shards get rows.
func TestLocalRoutingMatchesDistributed(t *testing.T) {
	c := testsvc.ClickHouseClusterServers(t)
	db := testsvc.UniqueName(t, "shardkey")
	onEveryNode(t, c, "CREATE DATABASE "+db)
	t.Cleanup(func() {
		for _, n := range c.Nodes() {
			_, _ = n.Query(context.Background(), "DROP DATABASE IF EXISTS "+db)
		}
	})
	dist, local := clusterStore(t, c, clickhousestore.InsertDistributed), clusterStore(t, c, clickhousestore.InsertLocal)
	rs := keyRows(400)
	for i, key := range []string{"id", "i8", "intHash64(id)", "intHash64(i8)", "cityHash64(s)", "cityHash64(id)", "cityHash64(i8)", "cityHash64(id, s)", "cityHash64(s, i8, id)"} {
		for _, mode := range []string{"d", "l"} {
			tbl := fmt.Sprintf("%s%d", mode, i)
			onEveryNode(t, c, fmt.Sprintf("CREATE TABLE %s.%s (id UInt64, i8 Int8, s String) ENGINE = MergeTree ORDER BY id", db, tbl))
			onEveryNode(t, c, fmt.Sprintf("CREATE TABLE %[1]s.%[2]s_all AS %[1]s.%[2]s ENGINE = Distributed(%[3]s, %[1]s, %[2]s, %[4]s)", db, tbl, c.Name, key))
		}
		for mode, s := range map[string]*clickhousestore.Store{"d": dist, "l": local} {
			b := store.Batch{Target: store.Target{Database: db}, Table: fmt.Sprintf("%s%d_all", mode, i), Columns: []string{"id", "i8", "s"}, Rows: rs}
			if mode == "l" {
				// The gateway shards queued RowBinary rows (payload version 2) the same way.
				b.Rows, b.Types, b.Count = nil, []string{"UInt64", "Int8", "String"}, len(rs)
				b.RowBinary = rowBinaryOf(t, b.Types, rs)
			}
			if err := s.Insert(t.Context(), b); err != nil {
				t.Fatalf("key %s, mode %s: %v", key, mode, err)
			}
		}
		want, got := shardIDs(t, c, fmt.Sprintf("%s.d%d", db, i)), shardIDs(t, c, fmt.Sprintf("%s.l%d", db, i))
		for s := range want {
			if strings.Trim(want[s], "|") == "" {
				t.Errorf("key %s: the server put no row on shard %d", key, s+1)
			}
			if norm(got[s]) != norm(want[s]) {
				t.Errorf("key %s, shard %d: the gateway routed ids %.120s…, the server %.120s…", key, s+1, norm(got[s]), norm(want[s]))
			}
		}
	}
}

// norm merges the per-replica id lists of a shard into one sorted list.
func norm(perReplica string) string {
	var ids []string
	for _, part := range strings.Split(perReplica, "|") {
		if part != "" {
			ids = append(ids, strings.Split(part, ",")...)
		}
	}
	m := map[string]bool{}
	for _, id := range ids {
		m[id] = true
	}
	out := make([]string, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sortNumeric(out)
	return strings.Join(out, ",")
}

func sortNumeric(ids []string) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && (len(ids[j]) < len(ids[j-1]) || len(ids[j]) == len(ids[j-1]) && ids[j] < ids[j-1]); j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
}

// TestLocalModeRefusesUnsupportedKey: in insert mode local, a Distributed table whose key the
// gateway cannot evaluate is an error of Report naming the table and key (the boot check),
// while its inserts still land, through the Distributed table. Report says which mechanism
// protects each table: block checksums for a Replicated local table on 18.16, none for MergeTree.
func TestLocalModeRefusesUnsupportedKey(t *testing.T) {
	c := testsvc.ClickHouseClusterServers(t)
	db := clusterDB(t, c)
	onEveryNode(t, c, "CREATE TABLE "+db+".r (id UInt64, s String) ENGINE = MergeTree ORDER BY id")
	onEveryNode(t, c, fmt.Sprintf("CREATE TABLE %[1]s.r_all AS %[1]s.r ENGINE = Distributed(%[2]s, %[1]s, r, rand())", db, c.Name))
	s := clusterStore(t, c, clickhousestore.InsertLocal)
	tgt := store.Target{Database: db}
	reports, err := s.Report(t.Context(), tgt)
	if !errors.Is(err, store.ErrRejected) || !strings.Contains(err.Error(), db+".r_all") || !strings.Contains(err.Error(), "rand()") {
		t.Errorf("Report error = %v, want ErrRejected naming %s.r_all and rand()", err, db)
	}
	want := map[string][2]string{ // table → insert, dedup
		"t": {"direct", clickhousestore.DedupChecksum}, "t_all": {"local", clickhousestore.DedupChecksum},
		"r": {"direct", clickhousestore.DedupNone}, "r_all": {"distributed", clickhousestore.DedupNone},
	}
	for _, r := range reports {
		if w, ok := want[r.Table]; !ok || w != [2]string{r.Insert, r.Dedup} {
			t.Errorf("Report %s: insert %s, dedup %q; want %v", r.Table, r.Insert, r.Dedup, w)
		}
		delete(want, r.Table)
	}
	if len(want) != 0 {
		t.Errorf("Report misses %v", want)
	}
	if err := s.Insert(t.Context(), store.Batch{Target: tgt, Table: "r_all", Columns: []string{"id", "s"}, Rows: rows(0, 50, "")}); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, node := range c.Nodes() { // a plain MergeTree: each row is on one replica of its shard
		var k int
		_, _ = fmt.Sscan(scalar(t, node, "SELECT count() FROM "+db+".r"), &k)
		total += k
	}
	if total != 50 {
		t.Errorf("rows through the Distributed table: %d on the nodes, want 50", total)
	}
}

// rowBinaryOf encodes canonical rows (JSON arrays) as RowBinary in types.
func rowBinaryOf(t *testing.T, types []string, rows [][]byte) []byte {
	t.Helper()
	var out []byte
	for _, row := range rows {
		var vals []json.RawMessage
		if err := json.Unmarshal(row, &vals); err != nil || len(vals) != len(types) {
			t.Fatalf("row %s: %v", row, err)
		}
		for i, v := range vals {
			ty, err := chtype.Parse(types[i])
			if err != nil {
				t.Fatal(err)
			}
			if out, err = ty.AppendRowBinary(out, v); err != nil {
				t.Fatalf("row %s: %v", row, err)
			}
		}
	}
	return out
}
