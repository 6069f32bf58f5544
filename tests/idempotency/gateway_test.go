package idempotency

import (
	"context"
	"fmt"
	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// readyTimeout bounds a gateway's boot (chDB loads a 559 MB library; the box is shared).
const readyTimeout = 90 * time.Second

// backends selects the layers of one gateway. Zero values are the embedded backends.
type backends struct {
	// Store is "chdb" (default) or "clickhouse".
	Store string
	// MQ is "embedded" (default) or "nats".
	MQ string
	// Cache is "local" (default) or "redis".
	Cache string
	// Dedupe is "local" (default) or "dynamodb".
	Dedupe string
}

// gatewayConfig is everything that varies between the gateways the tests start.
type gatewayConfig struct {
	backends

	CHDBLib    string              // with Store chdb
	CH         *testsvc.ClickHouse // with Store clickhouse
	CHDatabase string              // with Store clickhouse
	NATSURL    string              // with MQ nats
	MQPrefix   string              // with MQ nats
	RedisAddr  string              // with Cache redis
	RedisKeys  string              // with Cache redis: key prefix
	DynamoURL  string              // with Dedupe dynamodb
	DynamoTab  string              // with Dedupe dynamodb

	// Lease is idempotency.lease; empty keeps the default (30s).
	Lease string
	// Retention is idempotency.retention; empty keeps the default (24h).
	Retention string
	// FlushMaxWait is ingest.flush.max_wait; default 200ms so rows land quickly.
	FlushMaxWait string
}

// gateway is one wavehouse process, restartable on the same data dir and ports.
type gateway struct {
	cfg     gatewayConfig
	dir     string
	cfgPath string
	logPath string
	// API and Ops are the base URLs of the two listeners.
	API, Ops string
	client   *http.Client

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	starts int
	// env is added to the process environment of the next starts (setEnv).
	env []string
}

// setEnv sets the extra environment ("NAME=value" entries) of the following starts.
func (g *gateway) setEnv(kv ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.env = kv
}

// waitExit waits until the process ended by itself (a crash hook) and forgets it.
func (g *gateway) waitExit(t testing.TB, timeout time.Duration) {
	t.Helper()
	g.mu.Lock()
	done := g.done
	g.mu.Unlock()
	if done == nil {
		t.Fatal("gateway not running")
	}
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("gateway did not exit by itself within %v", timeout)
	}
	g.mu.Lock()
	g.cmd, g.done = nil, nil
	g.mu.Unlock()
}

// newGateway resolves the servers the backends need (isolated by unique names), writes a config
// on free loopback ports, starts the binary and waits for /readyz. It is stopped in t.Cleanup.
func newGateway(t testing.TB, b backends, tweak func(*gatewayConfig)) *gateway {
	t.Helper()
	cfg := gatewayConfig{backends: b}
	if cfg.Store == "clickhouse" {
		cfg.CH = testsvc.ClickHouseServer(t)
		cfg.CHDatabase = createDatabase(t, cfg.CH)
	} else {
		cfg.CHDBLib = testsvc.CHDBLib(t)
	}
	if cfg.MQ == "nats" {
		cfg.NATSURL = testsvc.NATSServer(t).URL
		cfg.MQPrefix = testsvc.UniqueName(t, "idem")
	}
	if cfg.Cache == "redis" {
		cfg.RedisAddr = testsvc.RedisServer(t).Addr
		cfg.RedisKeys = testsvc.UniqueName(t, "idem") + ":"
	}
	if cfg.Dedupe == "dynamodb" && cfg.DynamoURL == "" {
		cfg.DynamoURL = testsvc.DynamoDBServer(t).Endpoint
	}
	if cfg.Dedupe == "dynamodb" {
		cfg.DynamoTab = testsvc.UniqueName(t, "idem")
	}
	if cfg.FlushMaxWait == "" {
		cfg.FlushMaxWait = "200ms"
	}
	if tweak != nil {
		tweak(&cfg)
	}
	dir := t.TempDir()
	g := &gateway{
		cfg:     cfg,
		dir:     dir,
		cfgPath: filepath.Join(dir, "config.yaml"),
		logPath: filepath.Join(dir, "wavehouse.log"),
		client:  &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}, Timeout: 60 * time.Second},
	}
	apiPort, opsPort := freePort(t), freePort(t)
	g.API = fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	g.Ops = fmt.Sprintf("http://127.0.0.1:%d", opsPort)
	yaml, err := g.configYAML(apiPort, opsPort)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(g.cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.stop(t)
		g.client.CloseIdleConnections()
		if t.Failed() {
			t.Logf("gateway log tail (%s):\n%s", g.logPath, tail(g.logPath, 6000))
		}
	})
	g.start(t)
	return g
}

func (g *gateway) configYAML(apiPort, opsPort int) (string, error) {
	c := g.cfg
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  listen: 127.0.0.1:%d\nops:\n  listen: 127.0.0.1:%d\n", apiPort, opsPort)
	fmt.Fprintf(&b, "data_dir: %s\nshutdown_timeout: 20s\nlog:\n  level: warn\n", filepath.Join(g.dir, "data"))
	fmt.Fprintf(&b, "ingest:\n  wait_timeout: 30s\n  flush:\n    max_wait: %s\n", c.FlushMaxWait)
	b.WriteString("idempotency:\n  enabled: true\n")
	if c.Lease != "" {
		fmt.Fprintf(&b, "  lease: %s\n", c.Lease)
	}
	if c.Retention != "" {
		fmt.Fprintf(&b, "  retention: %s\n", c.Retention)
	}
	if c.Store == "clickhouse" {
		fmt.Fprintf(&b, "store:\n  backend: clickhouse\n  clickhouse:\n    addrs: [%q]\n    database: %s\n", c.CH.NativeAddr, c.CHDatabase)
	} else {
		fmt.Fprintf(&b, "store:\n  backend: chdb\n  chdb:\n    lib_path: %q\n", c.CHDBLib)
	}
	if c.MQ == "nats" {
		fmt.Fprintf(&b, "mq:\n  backend: nats\n  prefix: %s\n  nats:\n    urls: [%q]\n    replicas: 1\n    manage_topology: true\n", c.MQPrefix, c.NATSURL)
	} else {
		b.WriteString("mq:\n  backend: embedded\n  embedded:\n    sync: always\n")
	}
	if c.Cache == "redis" {
		fmt.Fprintf(&b, "cache:\n  backend: redis\n  redis:\n    addrs: [%q]\n    key_prefix: %q\n", c.RedisAddr, c.RedisKeys)
	}
	if c.Dedupe == "dynamodb" {
		// dynalite accepts any signature; the keys are given as files, as secrets must be.
		idFile, secretFile := filepath.Join(g.dir, "aws_key_id"), filepath.Join(g.dir, "aws_secret")
		if err := os.WriteFile(idFile, []byte("test\n"), 0o600); err != nil {
			return "", err
		}
		if err := os.WriteFile(secretFile, []byte("test\n"), 0o600); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "dedupe:\n  backend: dynamodb\n  dynamodb:\n    table: %s\n    region: us-east-1\n    endpoint: %q\n    create_table: true\n"+
			"    access_key_id_file: %q\n    secret_access_key_file: %q\n", c.DynamoTab, c.DynamoURL, idFile, secretFile)
	} else {
		b.WriteString("dedupe:\n  backend: local\n")
	}
	return b.String(), nil
}

// start launches the process and waits until /readyz answers 200.
func (g *gateway) start(t testing.TB) {
	t.Helper()
	g.mu.Lock()
	if g.cmd != nil {
		g.mu.Unlock()
		t.Fatal("gateway already running")
	}
	logf, err := os.OpenFile(g.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		g.mu.Unlock()
		t.Fatal(err)
	}
	g.starts++
	fmt.Fprintf(logf, "=== start %d\n", g.starts)
	cmd := exec.Command(binaryPath, "serve", "--config", g.cfgPath)
	cmd.Dir = g.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(gatewaybin.Env(), g.env...)
	if err := cmd.Start(); err != nil {
		g.mu.Unlock()
		logf.Close()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	g.cmd, g.done = cmd, done
	g.mu.Unlock()

	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case <-done:
			t.Fatalf("gateway exited before it was ready:\n%s", tail(g.logPath, 4000))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway not ready after %s:\n%s", readyTimeout, tail(g.logPath, 4000))
		}
		resp, err := g.client.Get(g.Ops + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
}

// stop shuts the process down gracefully (SIGTERM), killing it if it outlives the deadline.
func (g *gateway) stop(t testing.TB) {
	t.Helper()
	g.signal(t, syscall.SIGTERM, 40*time.Second)
}

// kill sends SIGKILL and waits until the process is gone.
func (g *gateway) kill(t testing.TB) {
	t.Helper()
	g.signal(t, syscall.SIGKILL, 30*time.Second)
}

func (g *gateway) signal(t testing.TB, sig syscall.Signal, timeout time.Duration) {
	t.Helper()
	g.mu.Lock()
	cmd, done := g.cmd, g.done
	g.cmd, g.done = nil, nil
	g.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(timeout):
		t.Errorf("gateway did not exit %s after %v; killing it", timeout, sig)
		_ = cmd.Process.Kill()
		<-done
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// tail returns the last n bytes of a file.
func tail(path string, n int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return string(b)
}

// createDatabase creates a unique database on a ClickHouse server and drops it in t.Cleanup.
func createDatabase(t testing.TB, ch *testsvc.ClickHouse) string {
	t.Helper()
	db := testsvc.UniqueName(t, "idem")
	if _, err := ch.Query(t.Context(), "CREATE DATABASE "+db); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = ch.Query(ctx, "DROP DATABASE IF EXISTS "+db)
	})
	return db
}
