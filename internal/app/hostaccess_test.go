package app

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/logbuf"
)

// TestOpsSQLHostAccessOnChDB runs operator SQL on the embedded chDB engine, where a table
// function runs inside the gateway's own process: file('/etc/passwd') and url(<a server the test
// runs>) answer 403 sql.host_access and the URL is never fetched; with
// ops_sql.allow_host_table_functions both run (the URL is fetched, the file's lines land in a
// table) and the boot log says the switch is on.
func TestOpsSQLHostAccessOnChDB(t *testing.T) {
	var hits atomic.Int64
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("secret\n"))
	}))
	t.Cleanup(internal.Close)
	readFile := `{"sql":"INSERT INTO leak SELECT x FROM file('/etc/passwd', 'LineAsString', 'x String')"}`
	fetchURL := `{"sql":"INSERT INTO leak SELECT x FROM url('` + internal.URL + `/meta', 'LineAsString', 'x String')"}`
	for _, allow := range []bool{false, true} {
		t.Run(map[bool]string{false: "default refuses", true: "switch allows"}[allow], func(t *testing.T) { hostAccessCase(t, allow, readFile, fetchURL, &hits) })
	}
}

// hostAccessCase boots one gateway with the switch set to allow and sends readFile and fetchURL.
func hostAccessCase(t *testing.T, allow bool, readFile, fetchURL string, hits *atomic.Int64) {
	const js = "application/json"
	cfg := testConfig(t)
	cfg.OpsSQL.AllowHostTableFunctions = allow
	var logs logbuf.Buffer
	a := startAppWithLog(t, cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	base := "http://" + a.APIAddr()
	if r := opsCall(t, a, "POST", "/v1/ops/sql", `{"sql":"CREATE TABLE leak (x String) ENGINE = MergeTree ORDER BY x"}`); r.code != 200 {
		t.Fatalf("create: %d %s", r.code, r.raw)
	}
	before := hits.Load()
	for _, body := range []string{readFile, fetchURL} {
		r := opsCall(t, a, "POST", "/v1/ops/sql", body)
		switch {
		case !allow && (r.code != http.StatusForbidden || r.body["code"] != "sql.host_access"):
			t.Errorf("switch off: %s answered %d %s, want 403 sql.host_access", body, r.code, r.raw)
		case allow && r.code != http.StatusOK:
			t.Errorf("switch on: %s answered %d %s, want 200", body, r.code, r.raw)
		}
	}
	r := call(t, "POST", base+"/v1/query", js, `{"sql":"SELECT count() AS n, countIf(x = 'secret') AS fetched, countIf(x LIKE 'root:%') AS root FROM leak"}`)
	if r.code != 200 {
		t.Fatalf("count: %d %s", r.code, r.raw)
	}
	fetched := hits.Load() - before
	warned := strings.Contains(logs.String(), "ops_sql.allow_host_table_functions is true")
	if allow {
		if fetched == 0 || !strings.Contains(r.raw, `"fetched":"1"`) && !strings.Contains(r.raw, `"fetched":1`) ||
			strings.Contains(r.raw, `"root":"0"`) || strings.Contains(r.raw, `"root":0`) || !warned {
			t.Errorf("switch on: url fetched %d times, rows %s, boot warning %t; want the file and the URL read and a warning", fetched, r.raw, warned)
		}
		return
	}
	if fetched != 0 || !strings.Contains(r.raw, `"n":"0"`) && !strings.Contains(r.raw, `"n":0`) || warned {
		t.Errorf("switch off: url fetched %d times, rows %s, boot warning %t; want nothing read and no warning", fetched, r.raw, warned)
	}
}
