package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultsAreValidAllEmbedded(t *testing.T) {
	cfg, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	checks := map[string][2]string{
		"server.listen": {cfg.Server.Listen, "127.0.0.1:8080"},
		"ops.listen":    {cfg.Ops.Listen, "127.0.0.1:9090"},
		"roles":         {cfg.Roles.String(), "api,ingest,sweeper"},
		"store":         {cfg.Store.Backend, "chdb"},
		"mq":            {cfg.MQ.Backend, "embedded"},
		"mq.sync":       {cfg.MQ.Embedded.Sync, "always"},
		"cache":         {cfg.Cache.Backend, "local"},
		"dedupe":        {cfg.Dedupe.Backend, "local"},
		"coord":         {cfg.Coord.Backend, "local"},
		"log.format":    {cfg.Log.Format, "json"},
		"chdb.path":     {cfg.Store.CHDB.Path, filepath.Join("data", "chdb")},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", name, c[0], c[1])
		}
	}
	host, _ := os.Hostname()
	if !strings.HasPrefix(cfg.InstanceID, host+"-") || len(cfg.InstanceID) != len(host)+9 {
		t.Errorf("instance_id = %q, want %s-<8 hex>", cfg.InstanceID, host)
	}
	if cfg.ShutdownTimeout.D() != 30*time.Second {
		t.Errorf("shutdown_timeout = %s", cfg.ShutdownTimeout)
	}
	if w := cfg.Warnings(); len(w) != 0 {
		t.Errorf("default config has warnings: %q", w)
	}
}

func TestYAMLOverridesDefaults(t *testing.T) {
	p := writeConfig(t, `
server:
  listen: 127.0.0.1:18080
roles: [api, ingest, sweeper]
shutdown_timeout: 5s
log: {level: debug, format: text}
ops:
  pprof: false
store:
  backend: clickhouse
  clickhouse:
    addrs: [127.0.0.1:9000, 127.0.0.2:9000]
    password_file: /run/secrets/ch
`)
	cfg, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Listen != "127.0.0.1:18080" || cfg.ShutdownTimeout.D() != 5*time.Second ||
		cfg.Log.Level != "debug" || cfg.Log.Format != "text" || cfg.Ops.Pprof ||
		cfg.Store.Backend != "clickhouse" || len(cfg.Store.ClickHouse.Addrs) != 2 ||
		cfg.Store.ClickHouse.PasswordFile != "/run/secrets/ch" {
		t.Fatalf("yaml not applied: %+v", cfg)
	}
	if cfg.Store.ClickHouse.Database != "default" {
		t.Errorf("default kept under a partial block: database = %q", cfg.Store.ClickHouse.Database)
	}
}

func TestEnvOverridesYAML(t *testing.T) {
	p := writeConfig(t, "server:\n  listen: 127.0.0.1:18080\nroles: api,ingest,sweeper\n")
	t.Setenv("WH_SERVER_LISTEN", "127.0.0.1:28080")
	t.Setenv("WH_ROLES", "ingest")
	t.Setenv("WH_STORE_CLICKHOUSE_ADDRS", "a:9000,b:9000")
	t.Setenv("WH_SHUTDOWN_TIMEOUT", "2s")
	t.Setenv("WH_OPS_PPROF", "false")
	cfg, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Listen != "127.0.0.1:28080" {
		t.Errorf("listen = %q", cfg.Server.Listen)
	}
	if cfg.Roles.String() != "ingest" {
		t.Errorf("roles = %q", cfg.Roles)
	}
	if got := strings.Join(cfg.Store.ClickHouse.Addrs, ","); got != "a:9000,b:9000" {
		t.Errorf("addrs = %q", got)
	}
	if cfg.ShutdownTimeout.D() != 2*time.Second {
		t.Errorf("shutdown_timeout = %s", cfg.ShutdownTimeout)
	}
	if cfg.Ops.Pprof {
		t.Error("WH_OPS_PPROF=false did not turn pprof off")
	}
}

func TestUnknownYAMLKeysRefusedByName(t *testing.T) {
	p := writeConfig(t, "server:\n  listen: 127.0.0.1:1\n  lisen: x\nstore:\n  clickhouse:\n    adrs: [x]\nbogus: 1\n")
	_, err := Load(p)
	if err == nil {
		t.Fatal("unknown keys accepted")
	}
	for _, want := range []string{"server.lisen (line 3)", "store.clickhouse.adrs (line 6)", "bogus (line 7)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestUnknownEnvRefusedByName(t *testing.T) {
	t.Setenv("WH_SERVER_LISTN", "x")
	t.Setenv("WH_BOGUS", "1")
	t.Setenv("WH_TEST_CLICKHOUSE_ADDR", "127.0.0.1:9000") // test tooling, accepted
	t.Setenv("WH_DEPS_DIR", "/tmp/x")
	t.Setenv("WH_NATS_SERVER_BIN", "/bin/nats-server")
	_, err := Load("")
	if err == nil {
		t.Fatal("unknown WH_* variables accepted")
	}
	for _, want := range []string{"WH_SERVER_LISTN", "WH_BOGUS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "WH_TEST_") || strings.Contains(err.Error(), "WH_DEPS_") || strings.Contains(err.Error(), "_BIN") {
		t.Errorf("tooling variable refused: %v", err)
	}
}

func TestEveryFieldHasEnvAndDescription(t *testing.T) {
	seen := map[string]string{}
	for _, f := range Fields() {
		if !strings.HasPrefix(f.Env, "WH_") || strings.HasSuffix(f.Env, "_") {
			t.Errorf("%s: env %q", f.Key, f.Env)
		}
		if f.Description == "" {
			t.Errorf("%s: no description", f.Key)
		}
		if other, dup := seen[f.Env]; dup {
			t.Errorf("%s and %s share %s", f.Key, other, f.Env)
		}
		seen[f.Env] = f.Key
	}
}
