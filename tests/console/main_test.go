// Package console_test is the acceptance suite of the operator console (docs/console.md): it runs
// the real wavehouse binary (all roles, chDB, embedded queue) with an operator key and one tenant,
// and drives the console's pages in a headless Chromium through chromedp: ingest moves the
// overview's counters and shows in the live tail, a row the table refuses shows in the
// dead-letter view with its reason and lands after the table is fixed and the entries replayed,
// a query returns rows and says HIT when repeated, and no console route answers without the
// operator credential. With WH_CONSOLE_SCREENSHOTS=DIR it also saves a screenshot of each view
// there (make console-screenshots writes docs/console/).
package console_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

var binaryPath string

func TestMain(m *testing.M) {
	os.Exit(gatewaybin.Main(m, gatewaybin.Suite{Name: "console", LeakCheck: true}, &binaryPath))
}

// gateway is one all-in-one process with an operator key, the tenant "acme", whose key has
// every scope, and the tenant "offline", whose own ClickHouse server is down.
type gateway struct {
	proc     *gatewaybin.Process
	client   gatewaybin.Client
	Operator string
	Tenant   string // acme's API key
}

func startGateway(t *testing.T) *gateway {
	t.Helper()
	dir := t.TempDir()
	op := make([]byte, 24)
	_, _ = rand.Read(op)
	key, err := auth.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{Operator: hex.EncodeToString(op), Tenant: key.Token,
		client: gatewaybin.Client{HTTP: &http.Client{Timeout: 60 * time.Second}}}
	t.Cleanup(g.client.HTTP.CloseIdleConnections)
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	opFile := write("operator.key", g.Operator+"\n")
	write("settings/tenants/acme.yaml", "database: acme\nkeys:\n  "+
		auth.KeyYAML(key, []auth.Scope{auth.ScopeIngest, auth.ScopeQuery, auth.ScopeStream, auth.ScopeAdmin}, nil, time.Time{})+"\n")
	// offline's own ClickHouse is a port nothing listens on: the console must say its store is down.
	pw := write("offline.password", "unused\n")
	write("settings/tenants/offline.yaml", fmt.Sprintf("database: offline\nclickhouse:\n  addrs: [\"127.0.0.1:9\"]\n  user: default\n  password_file: %s\n", pw))
	cfg := write("config.yaml", fmt.Sprintf(`server:
  listen: 127.0.0.1:0
ops:
  listen: 127.0.0.1:0
data_dir: %s
settings_dir: %s
auth:
  operator_key_file: %s
ingest:
  wait_timeout: 20s
  flush:
    max_wait: 100ms
store:
  backend: chdb
  chdb:
    lib_path: %q
mq:
  backend: embedded
`, filepath.Join(dir, "data"), filepath.Join(dir, "settings"), opFile, testsvc.CHDBLib(t)))
	g.proc = gatewaybin.NewProcess(t, gatewaybin.ProcessConfig{Name: "gateway", Binary: binaryPath,
		Args: []string{"serve", "--config", cfg}, Dir: dir, ListenAddrs: true, ReadyTimeout: 120 * time.Second})
	g.proc.Start(t)
	g.client.Base = g.proc.APIURL()
	return g
}

// do sends one request to the API listener with token as bearer ("" sends none).
func (g *gateway) do(t *testing.T, method, path, token string, body string, header ...string) gatewaybin.Response {
	t.Helper()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	return g.client.Do(t, method, path, h, b)
}

// sql runs operator SQL for acme.
func (g *gateway) sql(t *testing.T, stmt string) {
	t.Helper()
	if r := g.do(t, http.MethodPost, "/v1/ops/sql?tenant=acme", g.Operator, fmt.Sprintf(`{"sql":%q}`, stmt)); !r.OK() {
		t.Fatalf("ops/sql %q: %s", stmt, r)
	}
}

// ingest posts NDJSON rows to acme's table and waits until they are committed.
func (g *gateway) ingest(t *testing.T, table, ndjson string) {
	t.Helper()
	r := g.do(t, http.MethodPost, "/v1/ingest/"+table+"?wait=committed", g.Tenant, ndjson, "Content-Type", "application/x-ndjson")
	if !r.OK() {
		t.Fatalf("ingest %s: %s", table, r)
	}
}

// browser starts a headless Chromium (the one tests/browser uses) driven by chromedp.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		testsvc.Missing(t, "chromium is not installed (apt-get install -y chromium)")
		return nil
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// run runs browser actions with a deadline.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// text returns the text of the first node matching sel ("" on error).
func text(ctx context.Context, sel string) string {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(c, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		return ""
	}
	return s
}

// screenshot saves the page as DIR/name.png when WH_CONSOLE_SCREENSHOTS=DIR.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("WH_CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
