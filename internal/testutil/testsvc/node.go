package testsvc

import (
	"os"
	"path/filepath"
	"testing"
)

// NodeClient is the official ClickHouse Node client, @clickhouse/client, run unmodified by
// Node.js scripts of the tests.
type NodeClient struct {
	// Node is the node binary.
	Node string
	// Modules is the node_modules directory holding @clickhouse/client; scripts outside it find
	// the package when NODE_PATH names it (Env).
	Modules string
}

// Env is the environment entry that lets a script anywhere import the client's packages.
func (c NodeClient) Env() string { return "NODE_PATH=" + c.Modules }

// ClickHouseNodeClient locates node (WH_NODE_BIN, else PATH) and the node_modules holding
// @clickhouse/client: WH_TEST_NODE_MODULES when set, else
// ${WH_CACHE_DIR:-~/.cache/wavehouse}/node-clients/node_modules, where
// tests/deps/install.sh chclient puts it. Either missing is reported with Missing.
func ClickHouseNodeClient(t testing.TB) NodeClient {
	t.Helper()
	node, err := findBinary("WH_NODE_BIN", "node")
	if err != nil {
		Missing(t, "Node.js not found: install Node.js ≥ 20 (%v)", err)
	}
	dir := os.Getenv("WH_TEST_NODE_MODULES")
	if dir == "" {
		dir = filepath.Join(cacheDir(), "node-clients", "node_modules")
	}
	if _, err := os.Stat(filepath.Join(dir, "@clickhouse", "client", "package.json")); err != nil {
		Missing(t, "@clickhouse/client not installed: run tests/deps/install.sh chclient (%v)", err)
	}
	return NodeClient{Node: node, Modules: dir}
}
