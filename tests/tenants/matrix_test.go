package tenants_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/query"
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
	case r.Public:
		return 0, ""
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
	case r.missingScope(c) != "":
		return http.StatusForbidden, "auth.missing_scope"
	case c.Key.Tables != "" && r.Pattern == "POST /v1/ops/sql":
		return http.StatusForbidden, "auth.table_not_allowed" // operator SQL cannot be limited to tables
	case c.Key.Tables != "" && r.Table != noTable && !slices.Contains(strings.Split(c.Key.Tables, ","), "events"):
		return http.StatusForbidden, "auth.table_not_allowed"
	case r.OtherDatabase:
		return http.StatusForbidden, r.OtherCode
	}
	return 0, ""
}

// missingScope is the scope the tenant credential c lacks for route r, "" when it has it. On
// the ClickHouse interface, a credential with neither ingest nor query is refused before the
// statement is read, for lacking query.
func (r specRoute) missingScope(c caller) string {
	has := func(s string) bool { return slices.Contains(strings.Split(c.Key.Scopes, ","), s) }
	switch {
	case r.ClickHouse && !has("ingest") && !has("query"):
		return "query"
	case !has(r.Scope):
		return r.Scope
	}
	return ""
}

// otherDatabase is the database of the tenant c does not act as ({otherdb} of an
// OtherDatabase route): tenant_b for tenant a's credentials, tenant_a for b's.
func (c caller) otherDatabase() string {
	if c.Key != nil && c.Key.Tenant == "b" {
		return "tenant_a"
	}
	return "tenant_b"
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
	path := strings.ReplaceAll(r.Path, "{otherdb}", c.otherDatabase())
	if c.TenantParam != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "tenant=" + c.TenantParam
	}
	var body []byte
	if r.Body != "" {
		body = []byte(strings.ReplaceAll(r.Body, "{otherdb}", c.otherDatabase()))
	}
	token, hdr := chCredential(c.Token, r.Basic)
	if r.ClickHouse {
		hdr = append(hdr, "Content-Type", "text/plain")
	}
	if r.JSONErrors {
		hdr = append(hdr, "Accept", "application/json")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := g.send(ctx, r.method(), path, token, body, hdr...)
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
			got := g.call(t, c, r)
			status, code := c.expect(r)
			where := "route " + r.Pattern + " as " + c.Name + " (tenant " + c.tenantOf() + ")"
			if r.ClickHouse {
				where = r.method() + " " + r.Path + " " + strings.ReplaceAll(r.Body, "\n", `\n`) + " as " + c.Name + " (tenant " + c.tenantOf() + ")"
			}
			if status == 0 {
				if !got.OK() {
					t.Errorf("%s: got %s, want 2xx", where, got)
				}
				continue
			}
			var e gatewaybin.APIError
			switch {
			case r.ClickHouse && !r.JSONErrors:
				e = checkClickHouseError(t, where, got, code)
			case r.ClickHouse:
				e = got.APIError()
				checkExceptionCode(t, where, got, code)
			default:
				e = got.APIError()
			}
			if got.Status != status || e.Code != code {
				t.Errorf("%s: got %s (code %s), want %d %s", where, got, e.Code, status, code)
				continue
			}
			if status == http.StatusUnauthorized && got.Header.Get("WWW-Authenticate") != `Bearer realm="wavehouse"` {
				t.Errorf("%s: 401 without WWW-Authenticate: Bearer realm=\"wavehouse\" (got %q)", where, got.Header.Get("WWW-Authenticate"))
			}
			if code == "auth.missing_scope" {
				var d struct {
					MissingScope string `json:"missing_scope"`
				}
				if r.ClickHouse && !r.JSONErrors {
					continue // ClickHouse's form has no details
				}
				if err := json.Unmarshal(e.Details, &d); err != nil || d.MissingScope != r.missingScope(c) {
					t.Errorf("%s: details %s, want missing_scope %q", where, e.Details, r.missingScope(c))
				}
			}
		}
	}
}

// clickHouseExceptions are the ClickHouse errors (docs/clickhouse.md#errors) a ClickHouse client
// is shown for the refusals of the matrix: written out here rather than read from the gateway's
// own mapping, so that a changed mapping fails the matrix.
var clickHouseExceptions = map[string]string{
	"auth.missing_key":              "516 AUTHENTICATION_FAILED",
	"auth.invalid_key":              "516 AUTHENTICATION_FAILED",
	"auth.expired_token":            "516 AUTHENTICATION_FAILED",
	"auth.invalid_token":            "516 AUTHENTICATION_FAILED",
	"auth.missing_scope":            "497 ACCESS_DENIED",
	"auth.table_not_allowed":        "497 ACCESS_DENIED",
	"auth.operator_key_not_allowed": "497 ACCESS_DENIED",
	"database.not_allowed":          "497 ACCESS_DENIED",
	"sql.outside_tenant":            "497 ACCESS_DENIED",
}

// clickHouseErrorRe is a ClickHouse error body: "Code: N. DB::Exception: message (NAME)
// (version X.Y.Z.W)", the version the one version() reports.
var clickHouseErrorRe = regexp.MustCompile(`^Code: (\d+)\. DB::Exception: (.+) \(([A-Z_]+)\) \(version (\d+\.\d+\.\d+\.\d+)\)\n$`)

// checkClickHouseError checks an error answer of the ClickHouse interface in ClickHouse's form
// against the gateway code want: its body, its X-ClickHouse-Exception-Code and the gateway code
// in X-Wavehouse-Error-Code, which it returns as the APIError the caller compares.
func checkClickHouseError(t *testing.T, where string, got gatewaybin.Response, want string) gatewaybin.APIError {
	t.Helper()
	checkExceptionCode(t, where, got, want)
	m := clickHouseErrorRe.FindStringSubmatch(string(got.Body))
	if m == nil {
		t.Errorf("%s: body %q is not ClickHouse's error form", where, got.Body)
		return gatewaybin.APIError{Code: got.Header.Get("X-Wavehouse-Error-Code")}
	}
	if exc := m[1] + " " + m[3]; clickHouseExceptions[want] != "" && exc != clickHouseExceptions[want] {
		t.Errorf("%s: body says %s, want %s for %s", where, exc, clickHouseExceptions[want], want)
	}
	if m[4] != query.ServerVersion {
		t.Errorf("%s: body says version %s, want version() %s", where, m[4], query.ServerVersion)
	}
	return gatewaybin.APIError{Code: got.Header.Get("X-Wavehouse-Error-Code"), Error: m[2]}
}

// checkExceptionCode checks the X-ClickHouse-Exception-Code of an error answer of the ClickHouse
// interface (in either form) for the gateway code want.
func checkExceptionCode(t *testing.T, where string, got gatewaybin.Response, want string) {
	t.Helper()
	exc, ok := clickHouseExceptions[want]
	if !ok {
		t.Errorf("%s: no ClickHouse error written down for %s", where, want)
		return
	}
	if n, _, _ := strings.Cut(exc, " "); got.Header.Get("X-ClickHouse-Exception-Code") != n {
		t.Errorf("%s: X-ClickHouse-Exception-Code %q, want %s (%s)", where, got.Header.Get("X-ClickHouse-Exception-Code"), n, exc)
	}
}
