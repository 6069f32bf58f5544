package chclients

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// readyTimeout bounds a gateway's boot on the small shared box.
const readyTimeout = 90 * time.Second

// drainTimeout bounds the wait for acknowledged rows to reach ClickHouse.
const drainTimeout = 60 * time.Second

// target is a server speaking ClickHouse's HTTP protocol that a client is pointed at: the
// gateway, or ClickHouse itself for reference.
type target struct {
	name     string
	url      string // base URL, http://host:port
	user     string // what the client sends as its username
	password string // and as its password
	database string // the database the client names
	ch       *testsvc.ClickHouse
	gw       *gateway // nil for ClickHouse itself
}

// hostPort is the target's address without the scheme (clickhouse-go's Addr).
func (tg target) hostPort() string { return strings.TrimPrefix(tg.url, "http://") }

// sql runs a statement on the ClickHouse server behind the target, around the gateway.
func (tg target) sql(t testing.TB, stmt string) string {
	t.Helper()
	out, err := tg.ch.Query(t.Context(), stmt)
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	return out
}

// createTable creates table in the target's database with the column list cols.
func (tg target) createTable(t testing.TB, table, cols string) {
	t.Helper()
	tg.sql(t, fmt.Sprintf("CREATE TABLE %s.%s (%s) ENGINE = MergeTree() ORDER BY tuple()", tg.database, table, cols))
}

// count returns the rows of table in ClickHouse (not through the gateway).
func (tg target) count(t testing.TB, table string) int {
	t.Helper()
	s := strings.TrimSpace(tg.sql(t, fmt.Sprintf("SELECT count() FROM %s.%s", tg.database, table)))
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("count of %s: %q", table, s)
	}
	return n
}

// landed waits until every row the target acknowledged is in ClickHouse (the gateway's ingest
// has inserted as many rows as it accepted: the queue is drained) and then requires table to
// hold exactly want rows: each acknowledged row once.
func (tg target) landed(t testing.TB, table string, want int) {
	t.Helper()
	if tg.gw != nil {
		tg.gw.drained(t)
	}
	if got := tg.count(t, table); got != want {
		t.Fatalf("%s holds %d rows after the ingest drained, want exactly %d", table, got, want)
	}
}

// clickhouseTarget is ClickHouse itself over HTTP, with a fresh database on the shared server.
func clickhouseTarget(t testing.TB) target {
	t.Helper()
	ch := testsvc.ClickHouseServer(t)
	return target{
		name: "clickhouse", url: "http://" + ch.HTTPAddr, user: "default",
		database: ch.CreateDatabase(t, "chc"), ch: ch,
	}
}

// gatewayTarget starts a gateway over the shared ClickHouse server with one tenant owning a
// fresh database and an API key with the ingest and query scopes, which the clients send as
// their ClickHouse credentials.
func gatewayTarget(t testing.TB) target {
	t.Helper()
	ch := testsvc.ClickHouseServer(t)
	return startGateway(t, ch, ch.CreateDatabase(t, "chc")).target()
}

// gateway is one all-in-one wavehouse process (ClickHouse store, embedded queue with fsync)
// serving one tenant.
type gateway struct {
	proc     *gatewaybin.Process
	ch       *testsvc.ClickHouse
	tenant   string
	database string
	key      auth.NewKey
}

// tenantName is the tenant every gateway of the suite serves.
const tenantName = "acme"

// startGateway writes the config and the tenant's settings and starts the binary; it is
// stopped in t.Cleanup.
func startGateway(t testing.TB, ch *testsvc.ClickHouse, database string) *gateway {
	t.Helper()
	dir := t.TempDir()
	key, err := auth.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{ch: ch, tenant: tenantName, database: database, key: key}
	settings := filepath.Join(dir, "settings")
	tenantYAML := fmt.Sprintf("database: %s\nkeys:\n  %s\n", database,
		auth.KeyYAML(key, []auth.Scope{auth.ScopeIngest, auth.ScopeQuery}, nil, time.Time{}))
	writeFile(t, filepath.Join(settings, "tenants", g.tenant+".yaml"), tenantYAML)
	httpAddrs := ""
	if ch.HTTPAddr != "" {
		httpAddrs = fmt.Sprintf("    http_addrs: [%q]\n", ch.HTTPAddr)
	}
	cfg := fmt.Sprintf(`server:
  listen: 127.0.0.1:0
ops:
  listen: 127.0.0.1:0
data_dir: %s
settings_dir: %s
shutdown_timeout: 20s
log:
  level: info
ingest:
  wait_timeout: 20s
  flush:
    max_wait: 200ms
store:
  backend: clickhouse
  clickhouse:
    addrs: [%q]
    database: %s
%smq:
  backend: embedded
  embedded:
    sync: always
`, filepath.Join(dir, "data"), settings, ch.NativeAddr, database, httpAddrs)
	cfgPath := filepath.Join(dir, "config.yaml")
	writeFile(t, cfgPath, cfg)
	g.proc = gatewaybin.StartProcess(t, gatewaybin.ProcessConfig{
		Name: "gateway", Binary: binaryPath, Args: []string{"serve", "--config", cfgPath},
		Dir: dir, ListenAddrs: true, ReadyTimeout: readyTimeout,
	})
	return g
}

// target is the gateway as a ClickHouse server: the API listener, the tenant's database, and
// the API key as the password (the username is the tenant's name, which the gateway does not
// need: the key alone names the tenant).
func (g *gateway) target() target {
	return target{
		name: "gateway", url: g.proc.APIURL(), user: g.tenant, password: g.key.Token,
		database: g.database, ch: g.ch, gw: g,
	}
}

// drained waits until the gateway has inserted every row it accepted since its last start.
func (g *gateway) drained(t testing.TB) {
	t.Helper()
	poll.Until(t, drainTimeout, "the ingest to insert every accepted row", func() bool {
		ops := g.proc.OpsURL()
		acc := gatewaybin.MetricSum(t, ops, "wavehouse_ingest_rows_accepted_total")
		ins := gatewaybin.MetricSum(t, ops, "wavehouse_ingest_rows_inserted_total")
		return acc > 0 && ins >= acc
	})
}

// queryURL is the target's URL with a ClickHouse query string.
func (tg target) queryURL(params url.Values) string {
	return tg.url + "/?" + params.Encode()
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
