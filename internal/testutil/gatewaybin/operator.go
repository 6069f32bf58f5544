package gatewaybin

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/auth"
)

// DefaultTenant is the tenant of a gateway without API keys: the anonymous requests' tenant,
// which the operator names with ?tenant= on /v1/ops/* routes.
const DefaultTenant = auth.DefaultAnonymousTenant

// OperatorKey returns the operator key a gateway whose config sets no auth.operator_key_file
// generated at its first boot under dataDir (its data_dir); the process must have started. A
// missing or short file fails the test.
func OperatorKey(t testing.TB, dataDir string) string {
	t.Helper()
	path := auth.GeneratedOperatorKeyFile(dataDir)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the generated operator key (did the gateway boot with data_dir %s?): %v", dataDir, err)
	}
	key := strings.TrimSpace(string(b))
	if len(key) < 32 {
		t.Fatalf("%s holds %d characters, want an operator key of at least 32", path, len(key))
	}
	return key
}

// Bearer is the header of a JSON request with token as its bearer credential (none when token
// is empty).
func Bearer(token string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	return h
}

// Ops sends a request to an operator route (path under /v1/ops/, with or without a query) with
// token as the credential: the operator key, naming tenant with ?tenant= (empty sends none), or
// a tenant admin key (the gateway then ignores tenant). It returns the whole answer.
func (c Client) Ops(t testing.TB, token, tenant, method, path string, body []byte) Response {
	t.Helper()
	if tenant != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "tenant=" + url.QueryEscape(tenant)
	}
	h := Bearer(token)
	if body == nil {
		h.Del("Content-Type")
	}
	return c.Do(t, method, path, h, body)
}

// OpsSQL sends stmt to POST /v1/ops/sql as Ops does and returns the whole answer.
func (c Client) OpsSQL(t testing.TB, token, tenant, stmt string) Response {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"sql": stmt})
	return c.Ops(t, token, tenant, http.MethodPost, "/v1/ops/sql", b)
}

// MustOpsSQL is OpsSQL requiring 200.
func (c Client) MustOpsSQL(t testing.TB, token, tenant, stmt string) {
	t.Helper()
	if r := c.OpsSQL(t, token, tenant, stmt); r.Status != http.StatusOK {
		t.Fatalf("ops/sql %q: %s", stmt, r)
	}
}
