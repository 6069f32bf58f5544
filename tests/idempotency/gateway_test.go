package idempotency

import (
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

// gateway is one wavehouse process, restartable on the same data dir and addresses (proc).
type gateway struct {
	cfg gatewayConfig
	dir string
	// client talks to the API listener (client.Base is its URL); proc.OpsURL() is the ops one.
	client gatewaybin.Client
	proc   *gatewaybin.Process
}

// newGateway resolves the servers the backends need (isolated by unique names), writes a config
// with its listeners on port 0, starts the binary and waits for /readyz (restarts come back on
// the same addresses). It is stopped in t.Cleanup.
func newGateway(t testing.TB, b backends, tweak func(*gatewayConfig)) *gateway {
	t.Helper()
	cfg := gatewayConfig{backends: b}
	if cfg.Store == "clickhouse" {
		cfg.CH = testsvc.ClickHouseServer(t)
		cfg.CHDatabase = cfg.CH.CreateDatabase(t, "idem")
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
	g := &gateway{cfg: cfg, dir: dir, client: gatewaybin.Client{
		HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}, Timeout: 60 * time.Second},
	}}
	t.Cleanup(g.client.HTTP.CloseIdleConnections)
	yaml, err := g.configYAML()
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	g.proc = gatewaybin.StartProcess(t, gatewaybin.ProcessConfig{
		Name: "gateway", Binary: binaryPath, Args: []string{"serve", "--config", cfgPath}, Dir: dir, ListenAddrs: true,
	})
	g.client.Base = g.proc.APIURL()
	return g
}

// dataDir is the gateway's data_dir.
func (g *gateway) dataDir() string { return filepath.Join(g.dir, "data") }

func (g *gateway) configYAML() (string, error) {
	c := g.cfg
	var b strings.Builder
	b.WriteString("server:\n  listen: 127.0.0.1:0\nops:\n  listen: 127.0.0.1:0\n")
	fmt.Fprintf(&b, "data_dir: %s\nshutdown_timeout: 20s\nlog:\n  level: warn\n", g.dataDir())
	fmt.Fprintf(&b, "ingest:\n  wait_timeout: 30s\n  flush:\n    max_wait: %s\n", c.FlushMaxWait)
	b.WriteString("idempotency:\n  enabled: true\n")
	if c.Lease != "" {
		fmt.Fprintf(&b, "  lease: %s\n", c.Lease)
	}
	if c.Retention != "" {
		fmt.Fprintf(&b, "  retention: %s\n", c.Retention)
	}
	if c.Store == "clickhouse" {
		fmt.Fprintf(&b, "store:\n  backend: clickhouse\n  clickhouse:\n    addrs: [%q]\n    http_addrs: [%q]\n    database: %s\n", c.CH.NativeAddr, c.CH.HTTPAddr, c.CHDatabase)
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
