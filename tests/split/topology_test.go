package split

import (
	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// topologyRules are the messages of the boot topology rules (DESIGN.md §5,
// internal/config/validate.go), one distinctive fragment each.
var topologyRules = map[string]string{
	"split-embedded-mq":   "mq.backend: embedded cannot be shared between processes",
	"split-chdb":          "store.backend: chdb is in-process and cannot be shared",
	"coord-nats-no-nats":  "coord.backend: nats keeps leases on the mq.nats connection",
	"split-sweeper-local": "coord.backend: local leases cannot stop a sweeper in another process",
	"api-ingest-local":    "cache.backend: local cannot receive invalidations from inserts in another process",
	"split-dedupe-local":  "dedupe.backend: local keeps idempotency keys in one process",
	"public-no-auth":      "is not a loopback address and no API keys are configured",
}

// splitBase is a valid config for one process of the split topology; the blocks are replaced
// one at a time by the forbidden variants. No server is contacted: validation runs first.
func splitBase() map[string]string {
	return map[string]string{
		"roles":  "roles: api\n",
		"server": "server:\n  listen: 127.0.0.1:0\nops:\n  listen: 127.0.0.1:0\n",
		"store":  "store:\n  backend: clickhouse\n  clickhouse:\n    addrs: [\"127.0.0.1:1\"]\n",
		"mq":     "mq:\n  backend: nats\n  nats:\n    urls: [\"nats://127.0.0.1:1\"]\n",
		"cache":  "cache:\n  backend: redis\n  redis:\n    addrs: [\"127.0.0.1:1\"]\n",
		"dedupe": "dedupe:\n  backend: dynamodb\n  dynamodb:\n    endpoint: http://127.0.0.1:1\n",
		"coord":  "coord:\n  backend: nats\n",
		"auth":   "",
	}
}

// TestForbiddenTopologies boots the binary once per forbidden topology and requires a non-zero
// exit whose output carries that rule's message and no other rule's.
func TestForbiddenTopologies(t *testing.T) {
	cases := []struct {
		rule   string
		blocks map[string]string
	}{
		{"split-embedded-mq", map[string]string{"mq": "mq:\n  backend: embedded\n", "coord": "coord:\n  backend: local\n"}},
		{"split-chdb", map[string]string{"store": "store:\n  backend: chdb\n"}},
		{"coord-nats-no-nats", map[string]string{
			"roles": "roles: api,ingest,sweeper\n", "store": "store:\n  backend: chdb\n",
			"mq": "mq:\n  backend: embedded\n", "cache": "cache:\n  backend: local\n", "dedupe": "dedupe:\n  backend: local\n",
		}},
		{"split-sweeper-local", map[string]string{"roles": "roles: sweeper\n", "coord": "coord:\n  backend: local\n"}},
		{"api-ingest-local", map[string]string{"cache": "cache:\n  backend: local\n"}},
		{"split-dedupe-local", map[string]string{"roles": "roles: api\n", "dedupe": "dedupe:\n  backend: local\n"}},
		{"public-no-auth", map[string]string{"server": "server:\n  listen: 0.0.0.0:0\nops:\n  listen: 127.0.0.1:0\n"}},
	}
	if len(cases) != len(topologyRules) {
		t.Fatalf("%d cases for %d rules", len(cases), len(topologyRules))
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			blocks := splitBase()
			for k, v := range c.blocks {
				blocks[k] = v
			}
			path := writeConfig(t, blocks)
			code, out := runServe(t, path)
			if code == 0 {
				t.Fatalf("serve exited 0 for a forbidden topology:\n%s", out)
			}
			for rule, msg := range topologyRules {
				if has := strings.Contains(out, msg); has != (rule == c.rule) {
					t.Errorf("rule %s: message present %v, want %v", rule, has, rule == c.rule)
				}
			}
			if t.Failed() {
				t.Logf("exit %d, output:\n%s", code, out)
			}
		})
	}
	t.Run("allowed-base", func(t *testing.T) {
		// The base itself passes validation: `config check` accepts it, so each case above fails
		// only by its own change.
		code, out := runBinary(t, nil, "config", "check", "--config", writeConfig(t, splitBase()))
		if code != 0 {
			t.Fatalf("config check of the base: exit %d\n%s", code, out)
		}
	})
}

// writeConfig writes the blocks as one config file and returns its path.
func writeConfig(t *testing.T, blocks map[string]string) string {
	t.Helper()
	var b strings.Builder
	for _, k := range []string{"roles", "server", "store", "mq", "cache", "dedupe", "coord", "auth"} {
		b.WriteString(blocks[k])
	}
	b.WriteString("data_dir: " + filepath.Join(t.TempDir(), "data") + "\n")
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runServe runs `wavehouse serve --config path`, which must exit on its own within a minute.
func runServe(t *testing.T, path string) (int, string) {
	t.Helper()
	p := gatewaybin.NewProcess(t, gatewaybin.ProcessConfig{
		Name: "serve", Binary: binaryPath, Args: []string{"serve", "--config", path}, Dir: t.TempDir(),
	})
	p.Launch(t)
	code := p.Wait(t, time.Minute)
	if t.Failed() {
		t.Fatalf("serve did not exit within a minute (it should refuse to boot):\n%s", p.Output())
	}
	return code, p.Output()
}
