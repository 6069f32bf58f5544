package gatewaybin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/tbtest"
)

// TestOperatorHelpers: Ops adds ?tenant= (or &tenant=) and the bearer credential, OpsSQL sends
// the statement as {"sql": …}, MustOpsSQL fails the test on a non-200 answer, and OperatorKey
// reads the generated key file and fails the test when it is missing or short.
func TestOperatorHelpers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo", r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization")+" "+r.Header.Get("Content-Type")+" "+string(b))
		if strings.Contains(string(b), "FAIL") {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	c := Client{Base: srv.URL, HTTP: srv.Client()}
	for _, tc := range []struct {
		r    Response
		want string
	}{
		{c.Ops(t, "k", DefaultTenant, http.MethodGet, "/v1/ops/dlq", nil), "GET /v1/ops/dlq?tenant=default Bearer k"},
		{c.Ops(t, "k", "a b", http.MethodPost, "/v1/ops/dlq/t/replay?dry_run=true", nil), "POST /v1/ops/dlq/t/replay?dry_run=true&tenant=a+b Bearer k"},
		{c.OpsSQL(t, "admin", "", "SELECT 1"), `POST /v1/ops/sql Bearer admin application/json {"sql":"SELECT 1"}`},
		{c.OpsSQL(t, "", DefaultTenant, "SELECT 1"), `POST /v1/ops/sql?tenant=default  application/json {"sql":"SELECT 1"}`},
	} {
		if got := tc.r.Header.Get("X-Echo"); got != tc.want {
			t.Errorf("sent %q, want %q", got, tc.want)
		}
	}
	c.MustOpsSQL(t, "k", DefaultTenant, "SELECT 1")
	if msg := tbtest.FatalOf(t, func(tb testing.TB) { c.MustOpsSQL(tb, "k", DefaultTenant, "FAIL") }); !strings.Contains(msg, `ops/sql "FAIL": 401`) {
		t.Errorf("MustOpsSQL on a 401 failed the test with %q", msg)
	}

	dir := t.TempDir()
	if msg := tbtest.FatalOf(t, func(tb testing.TB) { OperatorKey(tb, dir) }); !strings.Contains(msg, "operator key") {
		t.Errorf("OperatorKey without the file: %q", msg)
	}
	path := filepath.Join(dir, "operator.key")
	if err := os.WriteFile(path, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if msg := tbtest.FatalOf(t, func(tb testing.TB) { OperatorKey(tb, dir) }); !strings.Contains(msg, "at least 32") {
		t.Errorf("OperatorKey with a short key: %q", msg)
	}
	key := strings.Repeat("x", 43)
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := OperatorKey(t, dir); got != key {
		t.Errorf("OperatorKey = %q, want %q", got, key)
	}
}
