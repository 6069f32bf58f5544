package browser_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/jwttest"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// tokenPage is the app of docs/jwt.md's walk-through: it gets a token from its own server,
// queries the gateway (another origin) through CORS, asks for a denied column, then streams
// with ?token= and reports what it saw.
const tokenPage = `<!doctype html>
<html><head><title>shop</title></head><body>
<script>
const gw = %q;
(async () => {
  const report = {};
  try {
    const token = await (await fetch("/token")).text();
    const ask = (sql) => fetch(gw + "/v1/query", {method: "POST",
      headers: {"Authorization": "Bearer " + token, "Content-Type": "application/json"},
      body: JSON.stringify({sql: sql, format: "json"})});
    const q = await ask("SELECT id FROM orders ORDER BY id");
    report.query = (await q.json()).data.map((r) => r.id);
    const d = await ask("SELECT secret FROM orders");
    report.denied = {status: d.status, code: (await d.json()).code};
    report.rows = [];
    report.columns = [];
    const es = new EventSource(gw + "/v1/stream/orders?since=0&token=" + encodeURIComponent(token));
    es.onopen = () => fetch("/opened", {method: "POST"});
    es.addEventListener("rows", (e) => {
      for (const r of JSON.parse(e.data)) {
        report.rows.push(r.id);
        for (const k of Object.keys(r)) if (!report.columns.includes(k)) report.columns.push(k);
      }
      if (report.rows.includes("a-live")) {
        es.close();
        fetch("/report", {method: "POST", body: JSON.stringify(report)});
      }
    });
  } catch (e) {
    report.error = String(e);
    fetch("/report", {method: "POST", body: JSON.stringify(report)});
  }
})();
</script>
<script src="/hold.js"></script>
</body></html>`

// pageReport is what tokenPage posts to /report.
type pageReport struct {
	Query  []string `json:"query"`
	Denied struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	} `json:"denied"`
	Rows    []string `json:"rows"`
	Columns []string `json:"columns"`
	Error   string   `json:"error"`
}

// TestTokenPageSeesOnlyItsRows runs the gateway binary and a page on another origin in
// headless Chromium: the page gets alice's token, queries through CORS (a preflighted POST),
// is refused a denied column, and its EventSource with ?token= receives alice's rows (history
// and live) and never bob's nor the denied column.
func TestTokenPageSeesOnlyItsRows(t *testing.T) {
	bin, ok := chromium(t)
	if !ok {
		return
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	hs := []byte(hex.EncodeToString(secret))
	const iss, aud = "https://idp.shop.test/", "wavehouse"
	token := func(sub string) string {
		return jwttest.Sign(t, jwt.SigningMethodHS256, "", hs, jwt.MapClaims{"iss": iss, "aud": aud, "sub": sub, "role": "customer",
			"exp": time.Now().Add(time.Hour).Unix()})
	}

	var gatewayURL atomic.Value
	opened, report, holdDone := make(chan struct{}, 1), make(chan pageReport, 1), make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, tokenPage, gatewayURL.Load())
	})
	// The app's own backend hands the signed-in user (alice) a token.
	mux.HandleFunc("GET /token", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, token("alice")) })
	mux.HandleFunc("POST /opened", func(w http.ResponseWriter, r *http.Request) {
		select {
		case opened <- struct{}{}:
		default:
		}
	})
	mux.HandleFunc("POST /report", func(w http.ResponseWriter, r *http.Request) {
		var rep pageReport
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Errorf("report %s: %v", b, err)
		}
		select {
		case report <- rep:
		default:
		}
	})
	mux.HandleFunc("GET /hold.js", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-holdDone:
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "text/javascript")
	})
	page := httptest.NewServer(mux)
	t.Cleanup(func() {
		page.CloseClientConnections()
		page.Close()
	})

	g := startShop(t, page.URL, hs, iss, aud)
	gatewayURL.Store(g.proc.APIURL())
	g.do(t, http.MethodPost, "/v1/ops/sql?tenant=shop", g.operator,
		`{"sql":"CREATE TABLE orders (id String, owner String DEFAULT '', secret String DEFAULT '') ENGINE = MergeTree() ORDER BY id"}`, http.StatusOK)
	g.do(t, http.MethodPost, "/v1/ingest/orders?wait=committed", token("alice"), `{"id":"a1","secret":"s3cr3t-a1"}`, http.StatusOK)
	g.do(t, http.MethodPost, "/v1/ingest/orders?wait=committed", token("bob"), `{"id":"bob-row-1","secret":"s3cr3t-b1"}`, http.StatusOK)

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	exited, out := startChromium(ctx, t, bin, page.URL+"/")
	select {
	case <-opened:
	case rep := <-report:
		t.Fatalf("the page reported before its stream opened: %+v\n%s", rep, out.String())
	case err := <-exited:
		t.Fatalf("chromium exited before the stream opened: %v\n%s", err, out.String())
	case <-ctx.Done():
		t.Fatalf("the page's EventSource did not open: %v\n%s\ngateway:\n%s", ctx.Err(), out.String(), g.proc.Tail(40))
	}
	// Live rows after the stream opened: bob's first, so that it would have arrived before
	// alice's if the policy let it through.
	g.do(t, http.MethodPost, "/v1/ingest/orders", token("bob"), `{"id":"bob-row-live","secret":"s3cr3t-b2"}`, http.StatusAccepted)
	g.do(t, http.MethodPost, "/v1/ingest/orders", token("alice"), `{"id":"a-live"}`, http.StatusAccepted)
	var rep pageReport
	select {
	case rep = <-report:
	case err := <-exited:
		t.Fatalf("chromium exited before reporting: %v\n%s", err, out.String())
	case <-ctx.Done():
		t.Fatalf("no report from the page: %v\n%s", ctx.Err(), out.String())
	}
	close(holdDone)
	select {
	case <-exited:
	case <-ctx.Done():
		t.Error("chromium did not exit after the page loaded")
	}
	if rep.Error != "" {
		t.Fatalf("the page failed: %s", rep.Error)
	}
	if !slices.Equal(rep.Query, []string{"a1"}) {
		t.Errorf("the page's query through CORS returned %q, want only alice's a1", rep.Query)
	}
	if rep.Denied.Status != http.StatusForbidden || rep.Denied.Code != "policy.column_denied" {
		t.Errorf("the page's query of the denied column: %+v, want 403 policy.column_denied", rep.Denied)
	}
	if !slices.Equal(rep.Rows, []string{"a1", "a-live"}) || slices.Contains(rep.Columns, "secret") {
		t.Errorf("the page's EventSource got rows %q with columns %q, want a1 and a-live without secret", rep.Rows, rep.Columns)
	}
	t.Logf("page on %s: query %q, denied %+v, stream rows %q, columns %q", page.URL, rep.Query, rep.Denied, rep.Rows, rep.Columns)
}

// shop is the gateway of the walk-through: one tenant, shop, accepting alice's and bob's tokens
// from the page's origin.
type shop struct {
	proc     *gatewaybin.Process
	operator string
}

func startShop(t *testing.T, origin string, secret []byte, iss, aud string) *shop {
	dir := t.TempDir()
	settings := filepath.Join(dir, "settings")
	write := func(path, content string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "hs256"), string(secret))
	write(filepath.Join(settings, "tenants", "shop.yaml"), fmt.Sprintf(`database: shop
jwt:
  issuer: %s
  audience: %s
  secret_files: [%s]
  roles:
    customer:
      scopes: [query, stream, ingest]
      tables: [orders]
      policies:
        orders: {deny_columns: [secret], filter: "owner = {claim:sub}", set: {owner: "{claim:sub}"}}
cors:
  origins: [%q]
`, iss, aud, filepath.Join(dir, "hs256"), origin))
	s := &shop{operator: "op-" + hex.EncodeToString(secret)}
	write(filepath.Join(dir, "operator.key"), s.operator)
	write(filepath.Join(dir, "config.yaml"), fmt.Sprintf(`server:
  listen: 127.0.0.1:0
ops:
  listen: 127.0.0.1:0
data_dir: %s
settings_dir: %s
auth:
  operator_key_file: %s
ingest:
  flush:
    max_wait: 200ms
store:
  backend: chdb
  chdb:
    lib_path: %q
mq:
  backend: embedded
`, filepath.Join(dir, "data"), settings, filepath.Join(dir, "operator.key"), testsvc.CHDBLib(t)))
	s.proc = gatewaybin.NewProcess(t, gatewaybin.ProcessConfig{Name: "gateway", Binary: binaryPath,
		Args: []string{"serve", "--config", filepath.Join(dir, "config.yaml")}, Dir: dir, ListenAddrs: true, ReadyTimeout: 120 * time.Second})
	s.proc.Start(t)
	return s
}

// do sends body with token as a server would (no Origin) and requires status.
func (s *shop) do(t *testing.T, method, path, token, body string, status int) {
	t.Helper()
	c := gatewaybin.Client{Base: s.proc.APIURL(), HTTP: &http.Client{Timeout: 60 * time.Second}}
	defer c.HTTP.CloseIdleConnections()
	h := http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}
	if r := c.Do(t, method, path, h, []byte(body)); r.Status != status {
		t.Fatalf("%s %s: %s, want %d", method, path, r, status)
	}
}
