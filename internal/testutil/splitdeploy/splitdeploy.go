// Package splitdeploy configures and starts the processes of a split WaveHouse deployment — the
// api, ingest and sweeper roles as separate processes of the real binary — over external NATS
// JetStream, Redis, dynalite and a ClickHouse server, for the suites that drive one (tests/split,
// tests/chaos).
package splitdeploy

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// Roles of the processes of a split deployment.
const (
	RoleAPI     = "api"
	RoleIngest  = "ingest"
	RoleSweeper = "sweeper"
)

// ReadyTimeout bounds one process's boot on the shared 2-core box.
const ReadyTimeout = 90 * time.Second

// Config timings of every process (Backends.Config): short flush, lease, sweep interval and
// history window, so that batching, takeovers and trimming all happen within seconds. With
// idempotency keys on, the sweeper keeps every frame for the queue's duplicate window (a retry
// reads its marked frame back, docs/adr/0012), so DuplicateWindow is short too: trimming
// starts DuplicateWindow after the first insert. It stays above the 30 s idempotency lease.
const (
	HistoryWindow   = 5 * time.Second
	SweepInterval   = time.Second
	DuplicateWindow = 40 * time.Second
)

// Servers are the ClickHouse, Redis and dynalite servers a deployment uses.
type Servers struct {
	CH          *testsvc.ClickHouse
	RedisAddr   string
	DynEndpoint string
}

// SharedServers returns the shared servers named by the WH_TEST_* variables, or private ones
// started for the test (testsvc).
func SharedServers(t testing.TB) Servers {
	t.Helper()
	return Servers{
		CH:          testsvc.ClickHouseServer(t),
		RedisAddr:   testsvc.RedisServer(t).Addr,
		DynEndpoint: testsvc.DynamoDBServer(t).Endpoint,
	}
}

// Backends are the servers every process of one deployment uses, isolated from other tests by
// unique names.
type Backends struct {
	NATSURLs    []string
	Replicas    int
	Prefix      string // mq.prefix
	CH          *testsvc.ClickHouse
	Database    string
	RedisAddr   string
	RedisPrefix string
	DynEndpoint string
	DynTable    string
	CredsDir    string // access key id and secret files for dynalite
	// Idempotency turns on idempotency (dedupe.backend dynamodb) in every process's config.
	Idempotency bool
	// Cluster, when set (UseCluster), is the store instead of CH: store.clickhouse.cluster with
	// its shards and ClusterInsert as the insert mode.
	Cluster       *testsvc.ClickHouseCluster
	ClusterInsert string
	// nats, when set (SecureNATS), gives every role its own NATS user.
	nats *natsAuth
}

// UseCluster makes the deployment's store the ClickHouse cluster c in insert mode insert, with
// the deployment's database created on every node (and dropped in t.Cleanup).
func (b *Backends) UseCluster(t testing.TB, c *testsvc.ClickHouseCluster, insert string) {
	t.Helper()
	b.Cluster, b.ClusterInsert = c, insert
	for _, n := range c.Nodes() {
		if _, err := n.Query(t.Context(), "CREATE DATABASE IF NOT EXISTS "+b.Database); err != nil {
			t.Fatalf("create database on %s: %v", n.NativeAddr, err)
		}
		t.Cleanup(func() { _, _ = n.Query(context.Background(), "DROP DATABASE IF EXISTS "+b.Database) })
	}
}

// storeYAML is the clickhouse block of the store section.
func (b *Backends) storeYAML() string {
	if b.Cluster == nil {
		return fmt.Sprintf("    addrs: [%q]\n%s    database: %s\n", b.CH.NativeAddr, httpAddrs(b.CH.HTTPAddr), b.Database)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "    database: %s\n    cluster:\n      name: %s\n      insert: %s\n      shards:\n", b.Database, b.Cluster.Name, b.ClusterInsert)
	for _, shard := range b.Cluster.Shards {
		var addrs []string
		for _, n := range shard {
			addrs = append(addrs, fmt.Sprintf("%q", n.NativeAddr))
		}
		fmt.Fprintf(&sb, "        - replicas: [%s]\n", strings.Join(addrs, ", "))
	}
	return sb.String()
}

// New returns Backends over srv with a unique database (created now, dropped in t.Cleanup),
// key prefix and table; natsURLs and replicas describe the queue.
func New(t testing.TB, srv Servers, natsURLs []string, replicas int) *Backends {
	t.Helper()
	b := &Backends{
		NATSURLs:    natsURLs,
		Replicas:    replicas,
		Prefix:      testsvc.UniqueName(t, "whs"),
		CH:          srv.CH,
		Database:    testsvc.UniqueName(t, "whsplit"),
		RedisAddr:   srv.RedisAddr,
		DynEndpoint: srv.DynEndpoint,
		DynTable:    testsvc.UniqueName(t, "whsplit"),
		CredsDir:    t.TempDir(),
	}
	b.RedisPrefix = b.Prefix + ":"
	if _, err := srv.CH.Query(t.Context(), "CREATE DATABASE "+b.Database); err != nil {
		t.Fatalf("create database: %v", err)
	}
	ch := srv.CH
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = ch.Query(ctx, "DROP DATABASE IF EXISTS "+b.Database)
	})
	for _, f := range []string{"key_id", "secret"} {
		if err := os.WriteFile(filepath.Join(b.CredsDir, f), []byte("splittest\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// Config is the boot config of one process of the deployment (see HistoryWindow and
// SweepInterval for its timings).
// Its listeners bind port 0; the process reports the addresses it bound (gatewaybin ListenAddrs).
func (b *Backends) Config(name, role, dir string) string {
	var urls []string
	for _, u := range b.NATSURLs {
		urls = append(urls, fmt.Sprintf("%q", u))
	}
	idem := ""
	if b.Idempotency {
		idem = "idempotency:\n  enabled: true\n"
	}
	user := ""
	if pw := b.NATSPasswordFile(role); pw != "" {
		user = fmt.Sprintf("    user: %s%s\n    password_file: %s\n", NATSUserPrefix, role, pw)
	}
	return fmt.Sprintf(`roles: %s
instance_id: %s
server:
  listen: 127.0.0.1:0
ops:
  listen: 127.0.0.1:0
data_dir: %s
shutdown_timeout: 15s
log:
  level: info
ingest:
  wait_timeout: 20s
  flush:
    max_wait: 200ms
stream:
  history_window: %s
sweeper:
  interval: %s
%sstore:
  backend: clickhouse
  clickhouse:
%smq:
  backend: nats
  prefix: %s
  nats:
    urls: [%s]
%s    replicas: %d
    duplicate_window: %s
    manage_topology: true
cache:
  backend: redis
  redis:
    addrs: [%q]
    key_prefix: %q
dedupe:
  backend: dynamodb
  dynamodb:
    table: %s
    endpoint: %s
    create_table: true
    access_key_id_file: %s
    secret_access_key_file: %s
coord:
  backend: nats
  lease: 2s
`, role, name, dataDir(dir), HistoryWindow, SweepInterval, idem,
		b.storeYAML(), b.Prefix, strings.Join(urls, ", "), user, b.Replicas, DuplicateWindow, b.RedisAddr, b.RedisPrefix,
		b.DynTable, b.DynEndpoint, filepath.Join(b.CredsDir, "key_id"), filepath.Join(b.CredsDir, "secret"))
}

// dataDir is the data_dir of the process whose directory is dir.
func dataDir(dir string) string { return filepath.Join(dir, "data") }

// Proc is one process of the deployment with one role, restartable on the same data dir and
// ports.
type Proc struct {
	Name string
	Role string
	API  string // base URL of the API listener (api role only)
	Ops  string // base URL of the ops listener
	// HTTP is a client for the process's listeners, closed in t.Cleanup.
	HTTP *http.Client
	// Process runs the binary.
	Process *gatewaybin.Process
}

// Start writes the config of one process of the deployment into a fresh directory, starts the
// binary on port 0 (restarts re-bind the addresses of the first start) and waits until /readyz
// answers 200.
func Start(t testing.TB, binary string, b *Backends, name, role string) *Proc {
	t.Helper()
	p := Prepare(t, binary, b, name, role)
	p.Process.Start(t)
	p.API, p.Ops = p.Process.APIURL(), p.Process.OpsURL()
	return p
}

// Prepare writes the config of one process of the deployment into a fresh directory and returns
// the process, not started. Processes booted together are launched one after another
// (p.Process.Launch) and then waited for with WaitReady, all from the test's goroutine.
func Prepare(t testing.TB, binary string, b *Backends, name, role string) *Proc {
	t.Helper()
	dir := t.TempDir()
	p := &Proc{
		Name: name, Role: role,
		HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 30 * time.Second},
	}
	t.Cleanup(p.HTTP.CloseIdleConnections)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(b.Config(name, role, dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	// Registered before the process's own cleanup, so it reads the log once the process stopped.
	t.Cleanup(func() { checkNoPermissionViolation(t, name, filepath.Join(dir, "wavehouse.log")) })
	p.Process = gatewaybin.NewProcess(t, gatewaybin.ProcessConfig{
		Name: name, Binary: binary, Args: []string{"serve", "--config", cfgPath},
		Dir: dir, LogPath: filepath.Join(dir, "wavehouse.log"), ListenAddrs: true, ReadyTimeout: ReadyTimeout, StopTimeout: 30 * time.Second,
	})
	return p
}

// WaitReady waits until a launched process's /readyz answers 200 and records its addresses.
func (p *Proc) WaitReady(t testing.TB) {
	t.Helper()
	p.Process.WaitReady(t)
	p.API, p.Ops = p.Process.APIURL(), p.Process.OpsURL()
}

// OperatorKey returns the operator key an api process generated in its data_dir at first boot
// (the deployment's configs set no auth.operator_key_file); the process must have started.
func (p *Proc) OperatorKey(t testing.TB) string {
	t.Helper()
	return gatewaybin.OperatorKey(t, dataDir(p.Process.Dir()))
}

// httpAddrs is the store.clickhouse.http_addrs line of the config (inserts as RowBinary over
// HTTP), empty when the server's HTTP address is unknown.
func httpAddrs(addr string) string {
	if addr == "" {
		return ""
	}
	return fmt.Sprintf("    http_addrs: [%q]\n", addr)
}
