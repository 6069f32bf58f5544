package split

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

// Roles of the processes the tests start.
const (
	roleAPI     = "api"
	roleIngest  = "ingest"
	roleSweeper = "sweeper"
)

// readyTimeout bounds one process's boot on this shared 2-core box.
const readyTimeout = 90 * time.Second

// backends are the shared servers every process of one test uses, isolated from other tests by
// unique names.
type backends struct {
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
}

// sharedBackends starts (or reuses, from the WH_TEST_* variables) ClickHouse, Redis and dynalite
// with a unique database, key prefix and table; natsURLs and replicas describe the queue.
func sharedBackends(t *testing.T, natsURLs []string, replicas int) *backends {
	t.Helper()
	ch := testsvc.ClickHouseServer(t)
	b := &backends{
		NATSURLs:    natsURLs,
		Replicas:    replicas,
		Prefix:      testsvc.UniqueName(t, "whs"),
		CH:          ch,
		Database:    testsvc.UniqueName(t, "whsplit"),
		RedisAddr:   testsvc.RedisServer(t).Addr,
		DynEndpoint: testsvc.DynamoDBServer(t).Endpoint,
		DynTable:    testsvc.UniqueName(t, "whsplit"),
		CredsDir:    t.TempDir(),
	}
	b.RedisPrefix = b.Prefix + ":"
	if _, err := ch.Query(t.Context(), "CREATE DATABASE "+b.Database); err != nil {
		t.Fatalf("create database: %v", err)
	}
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

// proc is one wavehouse process with one role, restartable on the same data dir and addresses.
type proc struct {
	Name   string
	Role   string
	API    string // base URL of the API listener (api role only), as the first start bound it
	Ops    string // base URL of the ops listener, as the first start bound it
	client *http.Client
	p      *gatewaybin.Process
}

// startProc writes the config of one process of the split topology and starts it.
func startProc(t *testing.T, b *backends, name, role string) *proc {
	t.Helper()
	dir := t.TempDir()
	p := &proc{
		Name: name, Role: role,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 30 * time.Second},
	}
	t.Cleanup(p.client.CloseIdleConnections)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(procConfig(b, name, role, dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	p.p = gatewaybin.StartProcess(t, gatewaybin.ProcessConfig{
		Name: name, Binary: binaryPath, Args: []string{"serve", "--config", cfgPath},
		Dir: dir, ListenAddrs: true, ReadyTimeout: readyTimeout, StopTimeout: 30 * time.Second,
	})
	p.API, p.Ops = p.p.APIURL(), p.p.OpsURL()
	return p
}

// procConfig is the boot config of one process: short flush, lease, sweep interval and history
// window, so that batching, takeovers and trimming all happen within seconds. Its listeners bind
// port 0 (gatewaybin reads back the addresses).
func procConfig(b *backends, name, role, dir string) string {
	var urls []string
	for _, u := range b.NATSURLs {
		urls = append(urls, fmt.Sprintf("%q", u))
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
  history_window: 5s
sweeper:
  interval: 1s
store:
  backend: clickhouse
  clickhouse:
    addrs: [%q]
    database: %s
mq:
  backend: nats
  prefix: %s
  nats:
    urls: [%s]
    replicas: %d
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
`, role, name, filepath.Join(dir, "data"), b.CH.NativeAddr, b.Database, b.Prefix,
		strings.Join(urls, ", "), b.Replicas, b.RedisAddr, b.RedisPrefix, b.DynTable, b.DynEndpoint,
		filepath.Join(b.CredsDir, "key_id"), filepath.Join(b.CredsDir, "secret"))
}

// start launches the process again and waits until /readyz answers 200.
func (p *proc) start(t *testing.T) {
	t.Helper()
	p.p.Start(t)
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	p.p.Kill(t)
}

// eventually polls cond every 100 ms until it is true or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
