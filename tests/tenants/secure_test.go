package tenants_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// anonymousWarning is the start of the line logged at every boot of a public anonymous API.
const anonymousWarning = "auth.allow_anonymous is true"

// TestSecureDefault boots the gateway in the four cases of docs/tenants.md "Secure default".
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
		if got := g.do(t, http.MethodPost, "/v1/ops/sql", "", []byte(`{"sql":"SELECT 1"}`)); got.Status != http.StatusForbidden || got.Code() != "auth.anonymous_ops" {
			t.Fatalf("anonymous POST /v1/ops/sql on a public gateway: %s, want 403 auth.anonymous_ops", got)
		}
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
		if strings.Contains(g.proc.Output(), anonymousWarning) {
			t.Fatalf("a gateway with keys logged %q", anonymousWarning)
		}
	})

	t.Run("loopback listener without keys is anonymous until a key exists", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, gatewayOptions{})
		g.sql(t, "", "", eventsDDL)
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
}
