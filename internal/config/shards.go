package config

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
)

// ClusterShard is one shard of store.clickhouse.cluster: its replicas' native host:port.
type ClusterShard struct {
	Replicas []string `yaml:"replicas"`
}

// ClusterShards lists the shards of a cluster in shard_num order. In YAML it is a list of
// {replicas: [host:port, …]}; in WH_STORE_CLICKHOUSE_CLUSTER_SHARDS, replicas are separated by
// commas and shards by semicolons ("a:9000,b:9000;c:9000,d:9000").
type ClusterShards []ClusterShard

// Addrs returns the replicas of each shard.
func (s ClusterShards) Addrs() [][]string {
	out := make([][]string, len(s))
	for i, sh := range s {
		out[i] = append([]string(nil), sh.Replicas...)
	}
	return out
}

// String formats the shards as the variable takes them.
func (s ClusterShards) String() string {
	parts := make([]string, len(s))
	for i, sh := range s {
		parts[i] = strings.Join(sh.Replicas, ",")
	}
	return strings.Join(parts, ";")
}

// UnmarshalText parses the variable form; cleanenv uses it for WH_* variables.
func (s *ClusterShards) UnmarshalText(b []byte) error {
	*s = nil
	if strings.TrimSpace(string(b)) == "" {
		return nil
	}
	for _, part := range strings.Split(string(b), ";") {
		var sh ClusterShard
		for _, r := range strings.Split(part, ",") {
			if r = strings.TrimSpace(r); r != "" {
				sh.Replicas = append(sh.Replicas, r)
			}
		}
		*s = append(*s, sh)
	}
	return nil
}

// UnmarshalYAML takes a list of {replicas: [...]} mappings.
func (s *ClusterShards) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("line %d: want a list of shards, each {replicas: [host:port, …]}", n.Line)
	}
	var out []ClusterShard
	for _, item := range n.Content {
		if item.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: a shard is {replicas: [host:port, …]}", item.Line)
		}
		var sh ClusterShard
		for i := 0; i+1 < len(item.Content); i += 2 {
			if k := item.Content[i].Value; k != "replicas" {
				return fmt.Errorf("line %d: unknown shard key %q (want replicas)", item.Content[i].Line, k)
			}
			if err := item.Content[i+1].Decode(&sh.Replicas); err != nil {
				return fmt.Errorf("line %d: replicas: want a list of host:port", item.Content[i+1].Line)
			}
		}
		out = append(out, sh)
	}
	*s = out
	return nil
}

// MarshalYAML writes the list of {replicas: [...]} mappings.
func (s ClusterShards) MarshalYAML() (any, error) { return []ClusterShard(s), nil }

// validate checks the cluster block with the store's own rules (clickhousestore.Cluster).
func (c ClickHouseCluster) validate() []error {
	err := clickhousestore.Cluster{Name: c.Name, Insert: c.Insert, Shards: c.Shards.Addrs()}.Validate()
	if err == nil {
		return nil
	}
	return []error{err}
}
