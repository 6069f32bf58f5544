package tenants_test

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// anonymousWarning is the start of the line logged at every boot of a public anonymous API.
const anonymousWarning = "auth.allow_anonymous is true"

// TestSecureDefault boots the gateway in the cases of docs/tenants.md "Secure default": the
// anonymous principal never runs operator SQL in any of them (docs/adr/0009).
func TestSecureDefault(t *testing.T) {
	t.Parallel()
	t.Run("public listener without keys refuses to boot", func(t *testing.T) {
		t.Parallel()
		g := newGateway(t, gatewayOptions{Listen: "0.0.0.0"})
		g.writeTenant(t, &tenant{Name: "nokeys", Database: "tenant_nokeys"})
		g.proc.Launch(t)
		if code := g.proc.Wait(t, readyTimeout); code == 0 {
			t.Fatalf("gateway on 0.0.0.0 with no API keys exited 0, want a refusal")
		}
		mustContain(t, "the refused boot's output", g.proc.Output(), "is not a loopback address", "no API keys", "auth.allow_anonymous")
	})

	t.Run("public listener with allow_anonymous boots and warns at every boot", func(t *testing.T) {
		t.Parallel()
		g := newGateway(t, gatewayOptions{Listen: "0.0.0.0", Env: []string{"WH_AUTH_ALLOW_ANONYMOUS=true"}})
		g.proc.Start(t)
		if got := g.do(t, http.MethodGet, "/v1/tables", "", nil); got.Status != http.StatusOK {
			t.Fatalf("GET /v1/tables without a key on an anonymous public gateway: %s, want 200", got)
		}
		refusesAnonymousOpsSQL(t, g, "auth.anonymous_ops")
		g.sql(t, g.Operator, "default", "SELECT 1")
		g.proc.Stop(t)
		g.proc.Start(t)
		if n := strings.Count(g.proc.Output(), anonymousWarning); n != 2 {
			t.Fatalf("the warning %q was logged %d times over 2 boots, want once per boot", anonymousWarning, n)
		}
	})

	t.Run("public listener with keys requires them", func(t *testing.T) {
		t.Parallel()
		p := &tenant{Name: "p", Database: "tenant_p"}
		p.Keys = []*apiKey{newKey(t, "p", "query", "query", "")}
		g := startGateway(t, gatewayOptions{Listen: "0.0.0.0"}, p)
		if got := g.do(t, http.MethodGet, "/v1/tables", "", nil); got.Status != http.StatusUnauthorized || got.Code() != "auth.missing_key" {
			t.Fatalf("GET /v1/tables without a key: %s, want 401 auth.missing_key", got)
		}
		if got := g.do(t, http.MethodGet, "/v1/tables", p.Keys[0].Token, nil); got.Status != http.StatusOK {
			t.Fatalf("GET /v1/tables with %s: %s, want 200", p.Keys[0], got)
		}
		refusesAnonymousOpsSQL(t, g, "auth.missing_key")
		if strings.Contains(g.proc.Output(), anonymousWarning) {
			t.Fatalf("a gateway with keys logged %q", anonymousWarning)
		}
	})

	t.Run("loopback listener without keys is anonymous until a key exists", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, gatewayOptions{})
		refusesAnonymousOpsSQL(t, g, "auth.anonymous_ops")
		g.sql(t, g.Operator, "default", eventsDDL)
		if got := g.ingest(t, "", "events", "wait=committed", `{"id":"anonymous","n":1}`); got.Status != http.StatusOK {
			t.Fatalf("anonymous ingest: %s, want 200", got)
		}
		if ids := g.ids(t, "", "SELECT id FROM events"); !slices.Equal(ids, []string{"anonymous"}) {
			t.Fatalf("anonymous query: %q, want the anonymous row", ids)
		}
		if strings.Contains(g.proc.Output(), anonymousWarning) {
			t.Fatalf("a loopback gateway logged %q", anonymousWarning)
		}
		k := newKey(t, "l", "query", "query", "")
		g.writeTenant(t, &tenant{Name: "l", Database: "tenant_l", Keys: []*apiKey{k}})
		poll.Until(t, reloadTimeout, "anonymous access to end once a key exists", func() bool {
			got := g.do(t, http.MethodGet, "/v1/tables", "", nil)
			return got.Status == http.StatusUnauthorized && got.Code() == "auth.missing_key"
		})
		if got := g.do(t, http.MethodGet, "/v1/tables", k.Token, nil); got.Status != http.StatusOK {
			t.Fatalf("GET /v1/tables with %s: %s, want 200", k, got)
		}
	})
	t.Run("loopback listener with allow_anonymous and no operator_key_file generates the operator key", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, gatewayOptions{AllowAnonymous: true, GeneratedOperatorKey: true})
		refusesAnonymousOpsSQL(t, g, "auth.anonymous_ops")
		key := g.generatedOperatorKey(t)
		path := filepath.Join(g.dataDir(), "operator.key")
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("generated operator key file: %v %v, want mode 0600", st, err)
		}
		mustContain(t, "the first boot's output", g.proc.Output(), "generated a key file", path)
		g.sql(t, key, "default", eventsDDL)
		g.proc.Stop(t)
		g.proc.Start(t)
		if again := g.generatedOperatorKey(t); again != key {
			t.Fatal("a restart replaced the generated operator key")
		}
		mustContain(t, "the second boot's output", g.proc.Output(), "using the generated key file")
		g.sql(t, key, "default", "SELECT 1")
	})
}

// refusesAnonymousOpsSQL checks that a request without a credential never runs operator SQL on
// g, with ?tenant= or without: 401 with code and a message saying how to send the operator key.
func refusesAnonymousOpsSQL(t *testing.T, g *gateway, code string) {
	t.Helper()
	for _, tenant := range []string{"", "default"} {
		got := g.api().OpsSQL(t, "", tenant, "SELECT 1")
		if got.Status != http.StatusUnauthorized || got.Code() != code || !strings.Contains(got.APIError().Error, "auth.operator_key_file") ||
			got.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("POST /v1/ops/sql without a credential (tenant %q): %s, want 401 %s naming auth.operator_key_file", tenant, got, code)
		}
	}
}
