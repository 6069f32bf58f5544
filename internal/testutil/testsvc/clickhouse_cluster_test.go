package testsvc

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/tbtest"
)

// TestClickHouseClusterPrivate starts a private 2 × 2 cluster and checks that every node knows
// the cluster, has its own macros and reaches ZooKeeper, and that a node killed and started
// again rejoins on its data.
func TestClickHouseClusterPrivate(t *testing.T) {
	start := time.Now()
	c := StartClickHouseCluster(t)
	t.Logf("ZooKeeper and 4 ClickHouse servers ready in %s", time.Since(start).Round(time.Millisecond))
	ctx := t.Context()
	for s, shard := range c.Shards {
		for r, n := range shard {
			got, err := n.Query(ctx, "SELECT groupArray(concat(toString(shard_num), '/', toString(replica_num), '/', toString(port))) FROM system.clusters WHERE cluster = '"+c.Name+"'")
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{fmt.Sprintf("'%d/%d/", s+1, r+1), strings.Split(n.NativeAddr, ":")[1]} {
				if !strings.Contains(got, want) {
					t.Errorf("s%dr%d: system.clusters %s lacks %s", s+1, r+1, got, want)
				}
			}
			macros, err := n.Query(ctx, "SELECT groupArray(concat(macro, '=', substitution)) FROM (SELECT * FROM system.macros ORDER BY macro)")
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("['replica=s%dr%d','shard=%d']", s+1, r+1, s+1); strings.TrimSpace(macros) != want {
				t.Errorf("s%dr%d: macros %s, want %s", s+1, r+1, macros, want)
			}
		}
	}
	n := c.Servers[1][1]
	n.Kill(t)
	if _, err := n.Query(ctx, "SELECT 1"); err == nil {
		t.Fatal("a killed node answered")
	}
	n.Start(t)
	if _, err := n.Query(ctx, "SELECT count() FROM system.zookeeper WHERE path = '/'"); err != nil {
		t.Fatalf("restarted node: %v", err)
	}
}

func TestClickHouseClusterServersPrivateWhenUnset(t *testing.T) {
	t.Setenv(envClusterAddrs, "")
	c := ClickHouseClusterServers(t)
	if len(c.Nodes()) != 4 || c.Name != ClusterName || c.ZooKeeperAddr == "" {
		t.Fatalf("cluster %+v", c)
	}
}

func TestClickHouseClusterServersSharedNeedsFourNodes(t *testing.T) {
	t.Setenv(envClusterAddrs, "127.0.0.1:1,127.0.0.1:2")
	t.Setenv(envClusterHTTPAddrs, "127.0.0.1:3,127.0.0.1:4")
	msg := tbtest.FatalOf(t, func(tb testing.TB) { ClickHouseClusterServers(tb) })
	if !strings.Contains(msg, "must each name 4 nodes") {
		t.Fatalf("two addresses for a 2 × 2 cluster: failure %q", msg)
	}
}
