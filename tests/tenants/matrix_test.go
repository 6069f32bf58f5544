package tenants_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// caller is one credential of the matrix.
type caller struct {
	Name        string
	Token       string
	Key         *apiKey // a tenant key; nil for the operator key and bad credentials
	Operator    bool
	TenantParam string // ?tenant= sent with the operator key
	Unknown     bool   // TenantParam names no tenant
	BadCode     string // the 401 code a bad credential gets
}

// expect is the documented answer of route r to c: a status (0 means any 2xx) and error code.
func (c caller) expect(r specRoute) (int, string) {
	switch {
	case c.BadCode != "":
		return http.StatusUnauthorized, c.BadCode
	case c.Operator && !r.Ops:
		return http.StatusForbidden, "auth.operator_key_not_allowed"
	case c.Operator && r.OperatorOnly:
		return 0, ""
	case c.Operator && c.TenantParam == "":
		return http.StatusBadRequest, "auth.tenant_required"
	case c.Operator && c.Unknown:
		return http.StatusBadRequest, "auth.unknown_tenant"
	case c.Operator:
		return 0, ""
	case r.OperatorOnly:
		return http.StatusForbidden, "auth.operator_only"
	case !slices.Contains(strings.Split(c.Key.Scopes, ","), r.Scope):
		return http.StatusForbidden, "auth.missing_scope"
	case c.Key.Tables != "" && r.Pattern == "POST /v1/ops/sql":
		return http.StatusForbidden, "auth.table_not_allowed" // operator SQL cannot be limited to tables
	case c.Key.Tables != "" && r.Table != noTable && !slices.Contains(strings.Split(c.Key.Tables, ","), "events"):
		return http.StatusForbidden, "auth.table_not_allowed"
	}
	return 0, ""
}

// tenantOf names the tenant c acts as, for failure messages.
func (c caller) tenantOf() string {
	switch {
	case c.Key != nil:
		return c.Key.Tenant
	case c.Operator && c.TenantParam != "":
		return c.TenantParam + " (via ?tenant=)"
	}
	return "none"
}

// matrixCallers are every key of the tenants, the operator key without, with a known and with
// an unknown ?tenant=, and bad credentials.
func matrixCallers(g *gateway, tenants ...*tenant) []caller {
	var cs []caller
	for _, tn := range tenants {
		for _, k := range tn.Keys {
			cs = append(cs, caller{Name: k.String(), Token: k.Token, Key: k})
		}
	}
	first := tenants[0]
	wrong := first.Keys[0]
	cs = append(cs,
		caller{Name: "operator key without ?tenant=", Token: g.Operator, Operator: true},
		caller{Name: "operator key ?tenant=" + first.Name, Token: g.Operator, Operator: true, TenantParam: first.Name},
		caller{Name: "operator key ?tenant=nosuch", Token: g.Operator, Operator: true, TenantParam: "nosuch", Unknown: true},
		caller{Name: "no credential", BadCode: "auth.missing_key"},
		caller{Name: "wrong secret for " + wrong.String(), Token: "wh_" + wrong.ID + "_" + strings.Repeat("0", 64), BadCode: "auth.invalid_key"},
		caller{Name: "unknown key id", Token: "wh_000000000000_" + strings.Repeat("1", 64), BadCode: "auth.invalid_key"},
		caller{Name: "malformed credential", Token: "not-a-key", BadCode: "auth.invalid_key"},
		caller{Name: "operator key with a typo", Token: g.Operator + "x", BadCode: "auth.invalid_key"},
	)
	return cs
}

// call makes route r's request as c. A live stream is not read: its status and headers are
// enough.
func (g *gateway) call(t *testing.T, c caller, r specRoute) gatewaybin.Response {
	t.Helper()
	path := r.Path
	if c.TenantParam != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "tenant=" + c.TenantParam
	}
	var body []byte
	if r.Body != "" {
		body = []byte(r.Body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := g.send(ctx, r.method(), path, c.Token, body)
	if err != nil {
		t.Fatalf("route %s as %s: %v", r.Pattern, c.Name, err)
	}
	defer resp.Body.Close()
	out := gatewaybin.Response{Status: resp.StatusCode, Header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return out
	}
	if out.Body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatalf("route %s as %s: reading the answer: %v", r.Pattern, c.Name, err)
	}
	return out
}

// checkMatrix calls every route as every caller and checks each answer against docs/tenants.md.
func checkMatrix(t *testing.T, g *gateway, callers []caller) {
	t.Helper()
	for _, c := range callers {
		for _, r := range specRoutes {
			if r.ClickHouse {
				continue
			}
			got := g.call(t, c, r)
			status, code := c.expect(r)
			where := "route " + r.Pattern + " as " + c.Name + " (tenant " + c.tenantOf() + ")"
			if status == 0 {
				if !got.OK() {
					t.Errorf("%s: got %s, want 2xx", where, got)
				}
				continue
			}
			e := got.APIError()
			if got.Status != status || e.Code != code {
				t.Errorf("%s: got %s, want %d %s", where, got, status, code)
				continue
			}
			if status == http.StatusUnauthorized && got.Header.Get("WWW-Authenticate") != `Bearer realm="wavehouse"` {
				t.Errorf("%s: 401 without WWW-Authenticate: Bearer realm=\"wavehouse\" (got %q)", where, got.Header.Get("WWW-Authenticate"))
			}
			if code == "auth.missing_scope" {
				var d struct {
					MissingScope string `json:"missing_scope"`
				}
				if err := json.Unmarshal(e.Details, &d); err != nil || d.MissingScope != r.Scope {
					t.Errorf("%s: details %s, want missing_scope %q", where, e.Details, r.Scope)
				}
			}
		}
	}
}
