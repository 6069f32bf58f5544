package tenants_test

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

// readyTimeout bounds a gateway's boot (chDB loads a large library; the box is shared).
const readyTimeout = 120 * time.Second

// gatewayOptions is what varies between the gateways the tests start.
type gatewayOptions struct {
	// Listen is the host of server.listen (default 127.0.0.1); the port is 0, bound by the
	// process (restarts re-bind the first start's port).
	Listen string
	// AllowAnonymous sets auth.allow_anonymous.
	AllowAnonymous bool
	// PollInterval is settings_poll_interval (default 200ms).
	PollInterval string
	// Env are extra KEY=VALUE variables for the process.
	Env []string
	// Store is the store block of the config (default: chdb with testsvc.CHDBLib).
	Store string
	// Extra is appended to the config verbatim (top-level YAML).
	Extra string
	// GeneratedOperatorKey leaves auth.operator_key_file out of the config, so that the gateway
	// generates the operator key in its data_dir (read it with generatedOperatorKey).
	GeneratedOperatorKey bool
}

// gateway is one all-in-one wavehouse process (chDB store, embedded queue) with a settings
// directory and an operator key.
type gateway struct {
	dir      string
	CfgPath  string
	Settings string            // settings_dir
	client   gatewaybin.Client // talks to the API listener; use api(), which knows its URL
	Operator string            // the operator key ("" with GeneratedOperatorKey)
	proc     *gatewaybin.Process
}

// newGateway prepares a gateway (config, operator key, empty settings directory) without
// starting it; seed the settings with writeTenant, then call proc.Start.
func newGateway(t testing.TB, o gatewayOptions) *gateway {
	t.Helper()
	if o.Listen == "" {
		o.Listen = "127.0.0.1"
	}
	if o.PollInterval == "" {
		o.PollInterval = "200ms"
	}
	if o.Store == "" {
		o.Store = fmt.Sprintf("store:\n  backend: chdb\n  chdb:\n    lib_path: %q\n", testsvc.CHDBLib(t))
	}
	dir := t.TempDir()
	g := &gateway{
		dir:      dir,
		Settings: filepath.Join(dir, "settings"),
		client:   gatewaybin.Client{HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 60 * time.Second}},
	}
	t.Cleanup(g.client.HTTP.CloseIdleConnections)
	if err := os.MkdirAll(filepath.Join(g.Settings, "tenants"), 0o755); err != nil {
		t.Fatal(err)
	}
	opKeyFile := ""
	if !o.GeneratedOperatorKey {
		g.Operator = newOperatorKey(t)
		opKeyFile = filepath.Join(dir, "operator.key")
		if err := os.WriteFile(opKeyFile, []byte(g.Operator+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`server:
  listen: %s:0
ops:
  listen: 127.0.0.1:0
data_dir: %s
settings_dir: %s
settings_poll_interval: %s
shutdown_timeout: 20s
log:
  level: info
auth:
  allow_anonymous: %t
  operator_key_file: %q
ingest:
  wait_timeout: 20s
  flush:
    max_wait: 200ms
%smq:
  backend: embedded
  embedded:
    sync: always
%s`, o.Listen, g.dataDir(), g.Settings, o.PollInterval, o.AllowAnonymous,
		opKeyFile, o.Store, o.Extra)
	g.CfgPath = filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(g.CfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	g.proc = gatewaybin.NewProcess(t, gatewaybin.ProcessConfig{
		Name: "gateway", Binary: binaryPath, Args: []string{"serve", "--config", g.CfgPath}, Env: o.Env,
		Dir: dir, LogPath: secrets.outputPath(t, "gateway"), ListenAddrs: true, ReadyTimeout: readyTimeout,
	})
	return g
}

// dataDir is the gateway's data_dir.
func (g *gateway) dataDir() string { return filepath.Join(g.dir, "data") }

// generatedOperatorKey returns the operator key a gateway started with GeneratedOperatorKey
// generated, registered with the suite as a secret that no output may contain.
func (g *gateway) generatedOperatorKey(t testing.TB) string {
	t.Helper()
	k := gatewaybin.OperatorKey(t, g.dataDir())
	secrets.add("generated operator key", k)
	return k
}

// startGateway is newGateway with the given tenants written, then started.
func startGateway(t testing.TB, o gatewayOptions, tenants ...*tenant) *gateway {
	t.Helper()
	g := newGateway(t, o)
	for _, tn := range tenants {
		g.writeTenant(t, tn)
	}
	g.proc.Start(t)
	return g
}

// writeTenant writes (or rewrites) a tenant's settings, as a folder with its pipes, by writing
// new files and renaming them into place, the way docs/tenants.md asks editors to.
func (g *gateway) writeTenant(t testing.TB, tn *tenant) {
	t.Helper()
	dir := filepath.Join(g.Settings, "tenants", tn.Name)
	for name, sql := range tn.Pipes {
		writeAtomic(t, filepath.Join(dir, "pipes", name+".sql"), sql)
	}
	writeAtomic(t, filepath.Join(dir, "tenant.yaml"), tn.yaml())
}

// removePipe deletes one of a tenant's pipe files.
func (g *gateway) removePipe(t testing.TB, tn *tenant, name string) {
	t.Helper()
	delete(tn.Pipes, name)
	if err := os.Remove(filepath.Join(g.Settings, "tenants", tn.Name, "pipes", name+".sql")); err != nil {
		t.Fatal(err)
	}
}

// writeRaw writes a file of the settings directory as given (for invalid edits).
func (g *gateway) writeRaw(t testing.TB, rel, content string) {
	t.Helper()
	writeAtomic(t, filepath.Join(g.Settings, rel), content)
}

// writeAtomic writes content to a dot-file beside path (ignored by the settings loader) and
// renames it into place.
func writeAtomic(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// mustContain fails unless s contains every one of want, showing the end of s.
func mustContain(t testing.TB, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Fatalf("%s does not contain %q; it ends with:\n%s", what, w, s[max(0, len(s)-4000):])
		}
	}
}

// gatewaybinRun runs a wavehouse subcommand to completion (config check, keys create).
func gatewaybinRun(t testing.TB, env []string, args ...string) (int, string) {
	t.Helper()
	return gatewaybin.Run(t, binaryPath, env, args...)
}
