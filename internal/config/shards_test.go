package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestClusterShardsFromYAMLAndEnv: the shards of store.clickhouse.cluster read the same from a
// config file and from WH_STORE_CLICKHOUSE_CLUSTER_SHARDS, and addrs may then be left out.
func TestClusterShardsFromYAMLAndEnv(t *testing.T) {
	want := [][]string{{"a:9000", "b:9000"}, {"c:9000", "d:9000"}}
	path := filepath.Join(t.TempDir(), "c.yaml")
	yaml := "store:\n  backend: clickhouse\n  clickhouse:\n    cluster:\n      name: wh\n      insert: local\n      shards:\n" +
		"        - replicas: [a:9000, b:9000]\n        - replicas: [c:9000, d:9000]\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Store.ClickHouse.Cluster.Shards.Addrs(); !reflect.DeepEqual(got, want) || c.Store.ClickHouse.Cluster.Insert != "local" {
		t.Errorf("from YAML: shards %v insert %q, want %v local", got, c.Store.ClickHouse.Cluster.Insert, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("a cluster without addrs: %v", err)
	}
	t.Setenv("WH_STORE_CLICKHOUSE_CLUSTER_SHARDS", "a:9000,b:9000;c:9000,d:9000")
	c, err = Load("")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Store.ClickHouse.Cluster.Shards.Addrs(); !reflect.DeepEqual(got, want) {
		t.Errorf("from the variable: shards %v, want %v", got, want)
	}
}

// TestClusterValidation: each mistake in the cluster block is refused naming its key.
func TestClusterValidation(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*ClickHouseCluster)
		want   string
	}{
		{func(c *ClickHouseCluster) { c.Name = "" }, "store.clickhouse.cluster.name"},
		{func(c *ClickHouseCluster) { c.Insert = "sideways" }, `store.clickhouse.cluster.insert: "sideways"`},
		{func(c *ClickHouseCluster) { c.Shards[1].Replicas = nil }, "store.clickhouse.cluster.shards[1]: lists no replica"},
		{func(c *ClickHouseCluster) { c.Shards[1].Replicas = []string{"a:9000"} }, "replica a:9000 is already in shard 0"},
		{func(c *ClickHouseCluster) { c.Shards[0].Replicas[0] = "nohost" }, `replica "nohost" is not host:port`},
		{func(c *ClickHouseCluster) { c.Shards = nil }, "store.clickhouse.cluster.shards: list the shards of cluster wh"},
	} {
		c := valid(t)
		c.Store.Backend = "clickhouse"
		c.Store.ClickHouse.Cluster = ClickHouseCluster{Name: "wh", Insert: "local", Shards: ClusterShards{{Replicas: []string{"a:9000"}}, {Replicas: []string{"b:9000"}}}}
		tc.mutate(&c.Store.ClickHouse.Cluster)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want it to say %q", err, tc.want)
		}
	}
}
