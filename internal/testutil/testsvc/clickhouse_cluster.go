package testsvc

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The shape of every test cluster: two shards of two replicas each.
const (
	clusterShards   = 2
	clusterReplicas = 2
	// ClusterName is the remote_servers name of the test cluster.
	ClusterName = "wh_cluster"
)

// ClickHouseCluster is a reachable ClickHouse cluster on ZooKeeper: every node has the same
// remote_servers entry Name (shards with internal_replication) and the macros {shard} (1, 2, …)
// and {replica} (s1r1, s1r2, …), so ReplicatedMergeTree('/clickhouse/tables/{shard}/db.t',
// '{replica}') and ON CLUSTER DDL work as in production.
type ClickHouseCluster struct {
	// Name is the cluster name in remote_servers (ClusterName).
	Name string
	// Shards lists the nodes: Shards[s][r] is replica r+1 of shard s+1.
	Shards [][]ClickHouse
	// ZooKeeperAddr is the host:port of the cluster's ZooKeeper.
	ZooKeeperAddr string
}

// Nodes returns every node, shard by shard.
func (c *ClickHouseCluster) Nodes() []*ClickHouse {
	var out []*ClickHouse
	for s := range c.Shards {
		for r := range c.Shards[s] {
			out = append(out, &c.Shards[s][r])
		}
	}
	return out
}

// ClickHouseClusterProcess is a private cluster owned by one test: a ZooKeeper and one
// clickhouse-server per replica, each of which the test may stop, kill and start again.
type ClickHouseClusterProcess struct {
	ClickHouseCluster
	// ZooKeeper is the cluster's coordination server.
	ZooKeeper *ZooKeeperProcess
	// Servers are the processes: Servers[s][r] serves Shards[s][r].
	Servers [][]*ClickHouseProcess
}

// Env variables naming a shared cluster (tests/deps/start.sh exports them). The address lists
// are shard by shard: shard 1 replica 1, shard 1 replica 2, shard 2 replica 1, shard 2 replica 2.
const (
	envClusterAddrs     = "WH_TEST_CH_CLUSTER_ADDRS"
	envClusterHTTPAddrs = "WH_TEST_CH_CLUSTER_HTTP_ADDRS"
	envClusterName      = "WH_TEST_CH_CLUSTER_NAME"
	envZooKeeperAddr    = "WH_TEST_ZOOKEEPER_ADDR"
)

// ClickHouseClusterServers returns the shared 2 × 2 cluster named by WH_TEST_CH_CLUSTER_ADDRS
// (native host:port of each node), WH_TEST_CH_CLUSTER_HTTP_ADDRS, WH_TEST_CH_CLUSTER_NAME and
// WH_TEST_ZOOKEEPER_ADDR when the first is set, and otherwise a private cluster started for this
// test and stopped in t.Cleanup. Tests on the shared cluster isolate themselves with unique
// database names (which also keeps their ZooKeeper paths apart) and never stop a node.
func ClickHouseClusterServers(t testing.TB) *ClickHouseCluster {
	t.Helper()
	addrs := os.Getenv(envClusterAddrs)
	if addrs == "" {
		return &StartClickHouseCluster(t).ClickHouseCluster
	}
	native := strings.Split(addrs, ",")
	httpAddrs := strings.Split(os.Getenv(envClusterHTTPAddrs), ",")
	if len(native) != clusterShards*clusterReplicas || len(httpAddrs) != len(native) {
		t.Fatalf("testsvc: %s and %s must each name %d nodes (shard by shard), got %q and %q",
			envClusterAddrs, envClusterHTTPAddrs, clusterShards*clusterReplicas, addrs, os.Getenv(envClusterHTTPAddrs))
	}
	c := &ClickHouseCluster{Name: os.Getenv(envClusterName), ZooKeeperAddr: os.Getenv(envZooKeeperAddr)}
	if c.Name == "" {
		c.Name = ClusterName
	}
	for s := range clusterShards {
		var shard []ClickHouse
		for r := range clusterReplicas {
			i := s*clusterReplicas + r
			checkShared(t, envClusterAddrs, native[i])
			shard = append(shard, ClickHouse{NativeAddr: native[i], HTTPAddr: httpAddrs[i]})
		}
		c.Shards = append(c.Shards, shard)
	}
	return c
}

// StartClickHouseCluster starts a private ZooKeeper and four clickhouse-server processes (two
// shards of two replicas) on free loopback ports, each with its own data directory, and waits
// until every node answers /ping and reads ZooKeeper. The servers are kept small for a shared
// 2-core machine: a 16 MiB mark cache, no uncompressed cache, four background merge threads.
// Everything is stopped in t.Cleanup.
func StartClickHouseCluster(t testing.TB) *ClickHouseClusterProcess {
	t.Helper()
	bin, err := clickHouseBinary()
	if err != nil {
		Missing(t, "clickhouse-server not installed: run tests/deps/install.sh clickhouse (%v)", err)
	}
	if _, _, err := zooKeeperCommand(); err != nil {
		Missing(t, "ZooKeeper not installed: run tests/deps/install.sh zookeeper (%v)", err)
	}
	zk := StartZooKeeper(t)
	root := t.TempDir()
	usersXML := filepath.Join(root, "users.xml")
	if err := os.WriteFile(usersXML, []byte(clusterUsersXML), 0o644); err != nil {
		t.Fatal(err)
	}
	cp := &ClickHouseClusterProcess{ZooKeeper: zk}
	cp.Name, cp.ZooKeeperAddr = ClusterName, zk.Addr
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		ports, err := freePorts(3 * clusterShards * clusterReplicas)
		if err != nil {
			t.Fatalf("testsvc: ClickHouse cluster: %v", err)
		}
		if err := cp.build(bin, root, usersXML, ports); err != nil {
			t.Fatalf("testsvc: ClickHouse cluster: %v", err)
		}
		if lastErr = cp.startAll(); lastErr == nil {
			for _, shard := range cp.Servers {
				for _, n := range shard {
					n.register(t)
				}
			}
			return cp
		}
		for _, shard := range cp.Servers {
			for _, n := range shard {
				t.Logf("testsvc: cluster node %s:\n%s", n.p.name, n.p.logTails())
				n.p.kill()
			}
		}
		t.Logf("testsvc: ClickHouse cluster start attempt %d failed: %v", attempt, lastErr)
	}
	t.Fatalf("testsvc: start ClickHouse cluster: %v", lastErr)
	return nil
}

// build lays out (without starting) the nodes on three ports each: HTTP, native, interserver.
func (cp *ClickHouseClusterProcess) build(bin, root, usersXML string, ports []int) error {
	port := func(s, r, k int) int { return ports[3*(s*clusterReplicas+r)+k] }
	var remote strings.Builder
	fmt.Fprintf(&remote, "    <remote_servers><%s>\n", cp.Name)
	for s := range clusterShards {
		remote.WriteString("        <shard><internal_replication>true</internal_replication>")
		for r := range clusterReplicas {
			fmt.Fprintf(&remote, "<replica><host>127.0.0.1</host><port>%d</port></replica>", port(s, r, 1))
		}
		remote.WriteString("</shard>\n")
	}
	fmt.Fprintf(&remote, "    </%s></remote_servers>\n", cp.Name)
	zkHost, zkPort, _ := strings.Cut(cp.ZooKeeperAddr, ":")
	cp.Shards, cp.Servers = nil, nil
	for s := range clusterShards {
		var shard []ClickHouse
		var servers []*ClickHouseProcess
		for r := range clusterReplicas {
			dir := filepath.Join(root, fmt.Sprintf("s%dr%d", s+1, r+1))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			extra := fmt.Sprintf(`    <interserver_http_port>%d</interserver_http_port>
    <interserver_http_host>127.0.0.1</interserver_http_host>
    <zookeeper><node><host>%s</host><port>%s</port></node></zookeeper>
    <macros><shard>%d</shard><replica>s%dr%d</replica></macros>
    <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
%s`, port(s, r, 2), zkHost, zkPort, s+1, s+1, r+1, remote.String())
			cfg := filepath.Join(dir, "config.xml")
			body := clickHouseConfig(chConfig{dir: dir, usersXML: usersXML, httpPort: port(s, r, 0), tcpPort: port(s, r, 1),
				markCacheBytes: 16 << 20, extra: extra})
			if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
				return err
			}
			node := &ClickHouseProcess{Dir: dir}
			node.HTTPAddr, node.NativeAddr = hostPort(port(s, r, 0)), hostPort(port(s, r, 1))
			node.p = &process{
				name:     fmt.Sprintf("clickhouse-server s%dr%d", s+1, r+1),
				bin:      bin,
				args:     []string{"--config-file=" + cfg},
				dir:      dir,
				logPath:  filepath.Join(dir, "stdout.log"),
				moreLogs: []string{filepath.Join(dir, "log", "clickhouse-server.err.log")},
				ready:    allOf(probeHTTP("http://"+node.HTTPAddr+"/ping", "Ok."), probeTCP(node.NativeAddr), probeZooKeeperFrom(&node.ClickHouse)),
			}
			shard = append(shard, node.ClickHouse)
			servers = append(servers, node)
		}
		cp.Shards = append(cp.Shards, shard)
		cp.Servers = append(cp.Servers, servers)
	}
	return nil
}

// startAll spawns every node, then waits until each is ready.
func (cp *ClickHouseClusterProcess) startAll() error {
	for _, shard := range cp.Servers {
		for _, n := range shard {
			if err := n.p.spawn(); err != nil {
				return err
			}
		}
	}
	for _, shard := range cp.Servers {
		for _, n := range shard {
			if err := n.p.waitReady(n.p.ready, readyTimeout); err != nil {
				return err
			}
		}
	}
	return nil
}

// probeZooKeeperFrom returns a probe that wants the server to read its ZooKeeper.
func probeZooKeeperFrom(ch *ClickHouse) readyFunc {
	return func(ctx context.Context) error {
		_, err := ch.Query(ctx, "SELECT count() FROM system.zookeeper WHERE path = '/'")
		return err
	}
}

// clusterUsersXML is the users config of the cluster nodes (tests/deps/start.sh uses the same
// file): user default without a password, and a default profile with few background threads
// (four servers share two cores).
//
//go:embed cluster-users.xml
var clusterUsersXML string
