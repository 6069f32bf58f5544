package integration

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

// Backends of one gateway.
const (
	storeCHDB       = "chdb"
	storeClickHouse = "clickhouse"
	mqEmbedded      = "embedded"
	mqNATS          = "nats"
)

// readyTimeout bounds a gateway's boot (chDB loads a 559 MB library; the box is shared).
const readyTimeout = 90 * time.Second

// gatewayConfig is what varies between the gateways the tests start.
type gatewayConfig struct {
	Store string // storeCHDB or storeClickHouse
	MQ    string // mqEmbedded or mqNATS

	CHDBLib    string // with storeCHDB
	CHAddr     string // with storeClickHouse: native host:port
	CHDatabase string // with storeClickHouse
	CHHTTPAddr string // with storeClickHouse: for reading rows back around the gateway

	NATSURL  string // with mqNATS
	MQPrefix string // with mqNATS: unique per test

	Roles         string // roles; empty runs all three
	RedisAddr     string // cache.backend redis at this address (needed by split roles)
	RedisPrefix   string // cache.redis.key_prefix
	NoIdempotency bool   // idempotency.enabled false (a split without a shared dedupe backend)

	FlushMaxWait string // ingest.flush.max_wait; default 200ms so tests see rows quickly
	FlushMaxRows int    // ingest.flush.max_rows; 0 keeps the default
	WaitTimeout  string // ingest.wait_timeout; default 20s
	MaxRows      int    // ingest.max_rows; 0 keeps the default
	MaxBodyBytes int64  // ingest.max_body_bytes; 0 keeps the default
	// TenantMaxBytes is mq.embedded.tenant_max_bytes; 0 keeps the default.
	TenantMaxBytes int64
	// UnboundedQueue sets mq.embedded.max_bytes and tenant_max_bytes to 0 (no limit).
	UnboundedQueue bool
	// StreamMaxBytes is mq.embedded.max_bytes (each partition stream's bound); 0 keeps the default.
	StreamMaxBytes int64
	// SweeperInterval is sweeper.interval; empty keeps the default.
	SweeperInterval string
	// AckWait is mq.ack_wait; empty keeps the default.
	AckWait string
}

// gateway is one wavehouse process, restartable on the same data dir and addresses.
type gateway struct {
	cfg    gatewayConfig
	dir    string
	client gatewaybin.Client // talks to the API listener (client.Base is its URL)
	proc   *gatewaybin.Process
}

// startGateway writes a config for cfg with its listeners on port 0, starts the binary and
// waits for /readyz; restarts come back on the addresses the first start bound. The process is stopped in t.Cleanup.
func startGateway(t *testing.T, cfg gatewayConfig) *gateway {
	t.Helper()
	if cfg.FlushMaxWait == "" {
		cfg.FlushMaxWait = "200ms"
	}
	if cfg.WaitTimeout == "" {
		cfg.WaitTimeout = "20s"
	}
	dir := t.TempDir()
	g := &gateway{cfg: cfg, dir: dir, client: gatewaybin.Client{
		HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 60 * time.Second},
	}}
	t.Cleanup(g.client.HTTP.CloseIdleConnections)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(g.configYAML()), 0o600); err != nil {
		t.Fatal(err)
	}
	g.proc = gatewaybin.StartProcess(t, gatewaybin.ProcessConfig{
		Name: "gateway", Binary: binaryPath, Args: []string{"serve", "--config", cfgPath},
		Dir: dir, ListenAddrs: true, ReadyTimeout: readyTimeout,
	})
	g.client.Base = g.proc.APIURL()
	return g
}

// dataDir is the gateway's data_dir.
func (g *gateway) dataDir() string { return filepath.Join(g.dir, "data") }

func (g *gateway) configYAML() string {
	var b strings.Builder
	b.WriteString("server:\n  listen: 127.0.0.1:0\nops:\n  listen: 127.0.0.1:0\n")
	fmt.Fprintf(&b, "data_dir: %s\nshutdown_timeout: 20s\nlog:\n  level: info\n", g.dataDir())
	if g.cfg.Roles != "" {
		fmt.Fprintf(&b, "roles: %s\n", g.cfg.Roles)
	}
	if g.cfg.RedisAddr != "" {
		fmt.Fprintf(&b, "cache:\n  backend: redis\n  redis:\n    addrs: [%q]\n    key_prefix: %q\n", g.cfg.RedisAddr, g.cfg.RedisPrefix)
	}
	if g.cfg.NoIdempotency {
		b.WriteString("idempotency:\n  enabled: false\n")
	}
	if g.cfg.SweeperInterval != "" {
		fmt.Fprintf(&b, "sweeper:\n  interval: %s\n", g.cfg.SweeperInterval)
	}
	fmt.Fprintf(&b, "ingest:\n  wait_timeout: %s\n  flush:\n    max_wait: %s\n", g.cfg.WaitTimeout, g.cfg.FlushMaxWait)
	if g.cfg.FlushMaxRows > 0 {
		fmt.Fprintf(&b, "    max_rows: %d\n", g.cfg.FlushMaxRows)
	}
	if g.cfg.MaxRows > 0 {
		fmt.Fprintf(&b, "  max_rows: %d\n", g.cfg.MaxRows)
	}
	if g.cfg.MaxBodyBytes > 0 {
		fmt.Fprintf(&b, "  max_body_bytes: %d\n", g.cfg.MaxBodyBytes)
	}
	switch g.cfg.Store {
	case storeClickHouse:
		fmt.Fprintf(&b, "store:\n  backend: clickhouse\n  clickhouse:\n    addrs: [%q]\n    database: %s\n", g.cfg.CHAddr, g.cfg.CHDatabase)
		if g.cfg.CHHTTPAddr != "" {
			fmt.Fprintf(&b, "    http_addrs: [%q]\n", g.cfg.CHHTTPAddr)
		}
	default:
		fmt.Fprintf(&b, "store:\n  backend: chdb\n  chdb:\n    lib_path: %q\n", g.cfg.CHDBLib)
	}
	switch g.cfg.MQ {
	case mqNATS:
		fmt.Fprintf(&b, "mq:\n  backend: nats\n  prefix: %s\n  nats:\n    urls: [%q]\n    replicas: 1\n    manage_topology: true\n", g.cfg.MQPrefix, g.cfg.NATSURL)
	default:
		b.WriteString("mq:\n  backend: embedded\n")
		if g.cfg.AckWait != "" {
			fmt.Fprintf(&b, "  ack_wait: %s\n", g.cfg.AckWait)
		}
		b.WriteString("  embedded:\n    sync: always\n")
		switch {
		case g.cfg.UnboundedQueue:
			b.WriteString("    max_bytes: 0\n    tenant_max_bytes: 0\n")
		case g.cfg.TenantMaxBytes > 0:
			fmt.Fprintf(&b, "    tenant_max_bytes: %d\n", g.cfg.TenantMaxBytes)
		}
		if g.cfg.StreamMaxBytes > 0 && !g.cfg.UnboundedQueue {
			fmt.Fprintf(&b, "    max_bytes: %d\n", g.cfg.StreamMaxBytes)
		}
	}
	return b.String()
}

// start launches the process again and waits until /readyz answers 200.
func (g *gateway) start(t *testing.T) {
	t.Helper()
	g.proc.Start(t)
}

// kill sends SIGKILL and waits for the process to be gone.
func (g *gateway) kill(t *testing.T) {
	t.Helper()
	g.proc.Kill(t)
}

// backendGateway starts a gateway over the given store and queue backends, isolated from every
// other test by a unique ClickHouse database and queue prefix.
func backendGateway(t *testing.T, storeBackend, mqBackend string, tweak func(*gatewayConfig)) *gateway {
	t.Helper()
	cfg := gatewayConfig{Store: storeBackend, MQ: mqBackend}
	switch storeBackend {
	case storeCHDB:
		cfg.CHDBLib = testsvc.CHDBLib(t)
	case storeClickHouse:
		ch := testsvc.ClickHouseServer(t)
		cfg.CHAddr, cfg.CHHTTPAddr = ch.NativeAddr, ch.HTTPAddr
		cfg.CHDatabase = ch.CreateDatabase(t, "whit")
	}
	if mqBackend == mqNATS {
		cfg.NATSURL = testsvc.NATSServer(t).URL
		cfg.MQPrefix = testsvc.UniqueName(t, "wh")
	}
	if tweak != nil {
		tweak(&cfg)
	}
	return startGateway(t, cfg)
}
