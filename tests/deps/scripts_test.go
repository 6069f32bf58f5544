// Package deps_test checks the dependency scripts in tests/deps: start.sh
// brings up every shared server (the 2 × 2 ClickHouse cluster and its
// ZooKeeper too) and writes env.sh, a second start.sh is a
// no-op, and stop.sh stops them all and is safe to repeat.
package deps_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// run runs one script with the given state directory and returns stdout.
func run(t *testing.T, state, script string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "WH_DEPS_DIR="+state)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", script, args, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// readEnv parses the export lines of env.sh.
func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "="); ok && !strings.HasPrefix(k, "#") {
			env[k] = v
		}
	}
	return env
}

func httpOK(t *testing.T, url string) bool {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func reachable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// requireBinaries reports a missing service binary through testsvc.Missing
// rather than letting start.sh install it from inside a test.
func requireBinaries(t *testing.T) {
	t.Helper()
	for _, bin := range []string{"/usr/sbin/clickhouse-server", "/usr/bin/redis-server", "curl", "java"} {
		if _, err := exec.LookPath(bin); err != nil {
			testsvc.Missing(t, "%s: run tests/deps/install.sh", bin)
		}
	}
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		testsvc.Missing(t, "zookeeper: run tests/deps/install.sh zookeeper (%v)", err)
	}
	root, _ := filepath.Abs("../..")
	nats := os.Getenv("WH_NATS_SERVER_BIN")
	if nats == "" {
		nats = filepath.Join(root, "bin", "nats-server")
	}
	if _, err := os.Stat(nats); err != nil {
		testsvc.Missing(t, "nats-server: run tests/deps/install.sh nats (%v)", err)
	}
	dyn := os.Getenv("WH_DYNALITE_BIN")
	if dyn == "" {
		cache := os.Getenv("WH_CACHE_DIR")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache", "wavehouse")
		}
		dyn = filepath.Join(cache, "dynalite", "node_modules", ".bin", "dynalite")
	}
	if _, err := os.Stat(dyn); err != nil {
		testsvc.Missing(t, "dynalite: run tests/deps/install.sh dynalite (%v)", err)
	}
}

func TestStartStopScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts every shared server")
	}
	requireBinaries(t)
	state := t.TempDir()
	t.Cleanup(func() {
		// Whatever happened, leave nothing running.
		cmd := exec.Command("bash", "stop.sh")
		cmd.Env = append(os.Environ(), "WH_DEPS_DIR="+state)
		_ = cmd.Run()
	})

	envPath := run(t, state, "start.sh")
	if envPath != filepath.Join(state, "env.sh") {
		t.Fatalf("start.sh printed %q, want %s", envPath, filepath.Join(state, "env.sh"))
	}
	env := readEnv(t, envPath)
	for _, k := range []string{
		"WH_TEST_CLICKHOUSE_ADDR", "WH_TEST_CLICKHOUSE_HTTP_ADDR", "WH_TEST_NATS_URL",
		"WH_TEST_REDIS_ADDR", "WH_TEST_DYNAMODB_ENDPOINT", "CHDB_LIB_PATH", "WH_NATS_SERVER_BIN",
		"WH_TEST_ZOOKEEPER_ADDR", "WH_TEST_CH_CLUSTER_NAME", "WH_TEST_CH_CLUSTER_ADDRS", "WH_TEST_CH_CLUSTER_HTTP_ADDRS",
		"WH_TEST_NODE_MODULES",
	} {
		if env[k] == "" {
			t.Errorf("env.sh does not export %s", k)
		}
	}
	if !httpOK(t, "http://"+env["WH_TEST_CLICKHOUSE_HTTP_ADDR"]+"/ping") || !reachable(env["WH_TEST_CLICKHOUSE_ADDR"]) {
		t.Error("ClickHouse not serving")
	}
	natsAddr := strings.TrimPrefix(env["WH_TEST_NATS_URL"], "nats://")
	if !reachable(natsAddr) {
		t.Error("NATS not serving")
	}
	if !reachable(env["WH_TEST_REDIS_ADDR"]) {
		t.Error("Redis not serving")
	}
	if !httpOK(t, env["WH_TEST_DYNAMODB_ENDPOINT"]+"/") {
		t.Error("dynalite not serving")
	}
	clusterNative := strings.Split(env["WH_TEST_CH_CLUSTER_ADDRS"], ",")
	clusterHTTP := strings.Split(env["WH_TEST_CH_CLUSTER_HTTP_ADDRS"], ",")
	if len(clusterNative) != 4 || len(clusterHTTP) != 4 {
		t.Fatalf("cluster addresses: %q and %q, want four of each", clusterNative, clusterHTTP)
	}
	for i := range clusterNative {
		if !httpOK(t, "http://"+clusterHTTP[i]+"/ping") || !reachable(clusterNative[i]) {
			t.Errorf("cluster node %d not serving", i+1)
		}
	}
	if !reachable(env["WH_TEST_ZOOKEEPER_ADDR"]) {
		t.Error("ZooKeeper not serving")
	}
	before, err := os.ReadFile(envPath)
	if err != nil {
		t.Fatal(err)
	}

	// Idempotent: a second start keeps the running servers.
	run(t, state, "start.sh")
	after, err := os.ReadFile(envPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Fatalf("second start.sh changed env.sh:\n%s\n---\n%s", before, after)
	}

	run(t, state, "stop.sh")
	if _, err := os.Stat(envPath); !os.IsNotExist(err) {
		t.Errorf("env.sh still present after stop.sh: %v", err)
	}
	for name, addr := range map[string]string{
		"ClickHouse": env["WH_TEST_CLICKHOUSE_ADDR"], "NATS": natsAddr,
		"Redis": env["WH_TEST_REDIS_ADDR"], "dynalite": strings.TrimPrefix(env["WH_TEST_DYNAMODB_ENDPOINT"], "http://"),
		"ZooKeeper": env["WH_TEST_ZOOKEEPER_ADDR"], "cluster node s1r1": clusterNative[0], "cluster node s2r2": clusterNative[3],
	} {
		if reachable(addr) {
			t.Errorf("%s still accepting connections at %s after stop.sh", name, addr)
		}
	}
	run(t, state, "stop.sh") // safe when nothing runs
}
