package testsvc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ClickHouse is a reachable ClickHouse server.
type ClickHouse struct {
	// NativeAddr is the host:port of the native protocol (clickhouse-go).
	NativeAddr string
	// HTTPAddr is the host:port of the HTTP interface.
	HTTPAddr string
}

// ClickHouseProcess is a private ClickHouse server process owned by one test.
type ClickHouseProcess struct {
	ClickHouse
	// Dir holds the server's config, data and logs.
	Dir string
	server
}

// ClickHouseServer returns the shared server named by WH_TEST_CLICKHOUSE_ADDR
// (native host:port) and WH_TEST_CLICKHOUSE_HTTP_ADDR when the first is set,
// and otherwise a private server started for this test and stopped in
// t.Cleanup. Tests on a shared server isolate themselves with unique
// database names and never stop it.
func ClickHouseServer(t testing.TB) *ClickHouse {
	t.Helper()
	if addr := os.Getenv("WH_TEST_CLICKHOUSE_ADDR"); addr != "" {
		checkShared(t, "WH_TEST_CLICKHOUSE_ADDR", addr)
		return &ClickHouse{NativeAddr: addr, HTTPAddr: os.Getenv("WH_TEST_CLICKHOUSE_HTTP_ADDR")}
	}
	return &StartClickHouse(t).ClickHouse
}

// clickHouseBinary locates clickhouse-server: WH_CLICKHOUSE_SERVER_BIN, the
// Debian package's /usr/sbin/clickhouse-server, else PATH.
func clickHouseBinary() (string, error) {
	return findBinary("WH_CLICKHOUSE_SERVER_BIN", "clickhouse-server", "/usr/sbin/clickhouse-server", "/usr/bin/clickhouse-server")
}

// StartClickHouse starts a fresh private clickhouse-server on free loopback
// ports with its data in a temporary directory, waits until /ping answers
// "Ok." and the native port accepts connections, and stops it in t.Cleanup
// (SIGTERM, then SIGKILL after ten seconds). It uses the packaged
// /etc/clickhouse-server/users.xml (user default, no password) and the UTC
// time zone.
func StartClickHouse(t testing.TB) *ClickHouseProcess {
	t.Helper()
	bin, err := clickHouseBinary()
	if err != nil {
		Missing(t, "clickhouse-server not installed: run tests/deps/install.sh clickhouse (%v)", err)
	}
	usersXML := "/etc/clickhouse-server/users.xml"
	if v := os.Getenv("WH_CLICKHOUSE_USERS_XML"); v != "" {
		usersXML = v
	}
	if _, err := os.Stat(usersXML); err != nil {
		Missing(t, "ClickHouse users config %s: %v: run tests/deps/install.sh clickhouse", usersXML, err)
	}
	dir := t.TempDir()
	cp := &ClickHouseProcess{Dir: dir}
	cp.p = launch(t, "clickhouse-server", 2, func(ports []int) (*process, error) {
		httpAddr, nativeAddr := hostPort(ports[0]), hostPort(ports[1])
		cfg := filepath.Join(dir, "config.xml")
		if err := os.WriteFile(cfg, []byte(clickHouseConfig(chConfig{dir: dir, usersXML: usersXML, httpPort: ports[0], tcpPort: ports[1]})), 0o644); err != nil {
			return nil, err
		}
		cp.NativeAddr, cp.HTTPAddr = nativeAddr, httpAddr
		return &process{
			name:     "clickhouse-server",
			bin:      bin,
			args:     []string{"--config-file=" + cfg},
			dir:      dir,
			logPath:  filepath.Join(dir, "stdout.log"),
			moreLogs: []string{filepath.Join(dir, "log", "clickhouse-server.err.log")},
			ready:    allOf(probeHTTP("http://"+httpAddr+"/ping", "Ok."), probeTCP(nativeAddr)),
		}, nil
	})
	cp.register(t)
	return cp
}

// Stop stops the server gracefully: SIGTERM, then SIGKILL after ten seconds.
func (c *ClickHouseProcess) Stop(t testing.TB) { t.Helper(); c.stopT(t) }

// Kill kills the server with SIGKILL and waits until it has exited.
func (c *ClickHouseProcess) Kill(t testing.TB) { t.Helper(); c.killT(t) }

// Start starts the server again on the same data directory and ports and
// waits until it is ready. It does nothing when the server is running.
func (c *ClickHouseProcess) Start(t testing.TB) { t.Helper(); c.startT(t) }

// chConfig is what a server config varies in.
type chConfig struct {
	dir, usersXML     string
	httpPort, tcpPort int
	// markCacheBytes, when set, sizes the mark cache and turns the uncompressed cache off
	// (cluster nodes: four servers on a small machine); 0 gives 64 MiB to each.
	markCacheBytes int
	// extra is inserted as is before the end of the config (cluster sections).
	extra string
}

// clickHouseConfig renders a minimal server config for ClickHouse 18.16 and
// later: everything under dir, loopback only, no query or part logs.
func clickHouseConfig(c chConfig) string {
	data := filepath.Join(c.dir, "data") + "/"
	logs := filepath.Join(c.dir, "log")
	mark, uncompressed := 64<<20, 64<<20
	if c.markCacheBytes > 0 {
		mark, uncompressed = c.markCacheBytes, 0
	}
	return fmt.Sprintf(`<?xml version="1.0"?>
<yandex>
    <logger>
        <level>information</level>
        <log>%[1]s/clickhouse-server.log</log>
        <errorlog>%[1]s/clickhouse-server.err.log</errorlog>
        <size>100M</size>
        <count>2</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <http_port>%[2]d</http_port>
    <tcp_port>%[3]d</tcp_port>
    <max_connections>4096</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>200</max_concurrent_queries>
    <uncompressed_cache_size>%[6]d</uncompressed_cache_size>
    <mark_cache_size>%[7]d</mark_cache_size>
    <path>%[4]s</path>
    <tmp_path>%[4]stmp/</tmp_path>
    <user_files_path>%[4]suser_files/</user_files_path>
    <format_schema_path>%[4]sformat_schemas/</format_schema_path>
    <users_config>%[5]s</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mlock_executable>false</mlock_executable>
%[8]s</yandex>
`, logs, c.httpPort, c.tcpPort, data, c.usersXML, uncompressed, mark, c.extra)
}

// Query runs sql over the HTTP interface as user default and returns the
// response body. A status other than 200 is an error carrying the server's
// message. It is a convenience for tests that need no driver.
func (c *ClickHouse) Query(ctx context.Context, sql string) (string, error) {
	if c.HTTPAddr == "" {
		return "", fmt.Errorf("testsvc: ClickHouse HTTP address unknown (set WH_TEST_CLICKHOUSE_HTTP_ADDR)")
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.HTTPAddr+"/?"+url.Values{"database": {"default"}}.Encode(), strings.NewReader(sql))
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("clickhouse: status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}

// CreateDatabase creates a database named UniqueName(t, prefix) on the server and drops it in
// t.Cleanup, failing the test when it cannot be created.
func (c *ClickHouse) CreateDatabase(t testing.TB, prefix string) string {
	t.Helper()
	db := UniqueName(t, prefix)
	if _, err := c.Query(t.Context(), "CREATE DATABASE "+db); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = c.Query(ctx, "DROP DATABASE IF EXISTS "+db)
	})
	return db
}
