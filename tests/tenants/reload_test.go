package tenants_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// reloadTimeout bounds how long a settings change may take to apply (poll interval 200ms, one
// interval of quiet, a loaded box).
const reloadTimeout = 30 * time.Second

// topPipe is the pipe the reload test adds.
const topPipe = "-- The newest ids.\n-- @param limit UInt32 default 10 How many.\n-- @tables events\nSELECT id FROM events ORDER BY id DESC LIMIT {limit:UInt32}\n"

// TestReloadOnChange edits the settings directory of a running gateway and checks that each
// change applies without a restart: a key added then revoked, a limit set then lifted, a pipe
// added, and an invalid edit refused (old keys keep working; the reload route answers 422 with
// the findings) until it is fixed.
func TestReloadOnChange(t *testing.T) {
	t.Parallel()
	r := &tenant{Name: "r", Database: "tenant_r"}
	r.Keys = []*apiKey{newKey(t, "r", "admin", "admin", ""), newKey(t, "r", "query", "query", "")}
	g := startGateway(t, gatewayOptions{}, r)
	g.sql(t, r.key(t, "admin").Token, "", eventsDDL)
	query := r.key(t, "query").Token
	added := newKey(t, "r", "added", "ingest", "")

	t.Run("add key", func(t *testing.T) {
		if got := g.ingest(t, added.Token, "events", "", `{"id":"x","n":1}`); got.Status != http.StatusUnauthorized || got.Code() != "auth.invalid_key" {
			t.Fatalf("ingest with %s before it is in settings: %s, want 401 auth.invalid_key", added, got)
		}
		r.Keys = append(r.Keys, added)
		g.writeTenant(t, r)
		poll.Until(t, reloadTimeout, added.String()+" to be accepted", func() bool {
			return g.ingest(t, added.Token, "events", "", `{"id":"added","n":1}`).Status == http.StatusAccepted
		})
	})

	t.Run("revoke key", func(t *testing.T) {
		r.Keys = r.without("added")
		g.writeTenant(t, r)
		poll.Until(t, reloadTimeout, added.String()+" to be revoked", func() bool {
			got := g.ingest(t, added.Token, "events", "", `{"id":"revoked","n":1}`)
			return got.Status == http.StatusUnauthorized && got.Code() == "auth.invalid_key"
		})
		if got := g.do(t, http.MethodGet, "/v1/tables", query, nil); got.Status != http.StatusOK {
			t.Fatalf("the remaining %s after the revocation: %s", r.key(t, "query"), got)
		}
	})

	t.Run("change limit", func(t *testing.T) {
		r.Limits = "{requests_per_second: 1, burst: 1}"
		g.writeTenant(t, r)
		var refused gatewaybin.Response
		poll.Until(t, reloadTimeout, "a 429 under requests_per_second 1", func() bool {
			for range 3 {
				if got := g.do(t, http.MethodGet, "/v1/tables", query, nil); got.Status == http.StatusTooManyRequests {
					refused = got
					return true
				}
			}
			return false
		})
		checkRefusal(t, "GET /v1/tables as "+r.key(t, "query").String(), refused, "limits.requests", 1)

		r.Limits = ""
		g.writeTenant(t, r)
		poll.Until(t, reloadTimeout, "the limit to be lifted", func() bool {
			for range 10 {
				if got := g.do(t, http.MethodGet, "/v1/tables", query, nil); got.Status != http.StatusOK {
					return false
				}
			}
			return true
		})
	})

	t.Run("add pipe", func(t *testing.T) {
		if got := g.do(t, http.MethodGet, "/v1/pipes/top", query, nil); got.Status != http.StatusNotFound {
			t.Fatalf("pipe top before its file exists: %s, want 404", got)
		}
		r.Pipes = map[string]string{"top": topPipe}
		g.writeTenant(t, r)
		poll.Until(t, reloadTimeout, "pipe top to be served", func() bool {
			return g.do(t, http.MethodGet, "/v1/pipes/top?limit=1", query, nil).Status == http.StatusOK
		})
	})

	t.Run("invalid edit", func(t *testing.T) {
		late := newKey(t, "r", "late", "ingest", "")
		bad := *r
		bad.Keys = append(append([]*apiKey{}, r.Keys...), late)
		bad.Extra = "scope: [everything]\n"
		g.writeTenant(t, &bad)

		got := g.do(t, http.MethodPost, "/v1/ops/settings/reload", g.Operator, nil)
		var e struct {
			Code    string `json:"code"`
			Details []struct {
				File    string `json:"file"`
				Line    int    `json:"line"`
				Message string `json:"message"`
			} `json:"details"`
		}
		_ = json.Unmarshal(got.Body, &e)
		if got.Status != http.StatusUnprocessableEntity || e.Code != "settings.invalid" || len(e.Details) == 0 ||
			e.Details[0].File != "tenants/r/tenant.yaml" || e.Details[0].Line == 0 || !strings.Contains(e.Details[0].Message, `"scope"`) {
			t.Fatalf("POST /v1/ops/settings/reload after an invalid edit: %s, want 422 settings.invalid naming tenants/r/tenant.yaml, its line and the key \"scope\"", got)
		}
		// The poller refuses the same directory and logs the finding once.
		poll.Until(t, reloadTimeout, "the poller to log the finding", func() bool {
			return strings.Contains(g.proc.Output(), "tenants/r/tenant.yaml")
		})
		if got := g.do(t, http.MethodGet, "/v1/tables", query, nil); got.Status != http.StatusOK {
			t.Fatalf("%s while the invalid edit is refused: %s, want the old settings serving", r.key(t, "query"), got)
		}
		if got := g.ingest(t, late.Token, "events", "", `{"id":"late","n":1}`); got.Status != http.StatusUnauthorized {
			t.Fatalf("%s from the refused edit: %s, want 401", late, got)
		}

		r.Keys = bad.Keys
		g.writeTenant(t, r)
		if got := g.do(t, http.MethodPost, "/v1/ops/settings/reload", g.Operator, nil); got.Status != http.StatusOK || !strings.Contains(string(got.Body), `"keys":3`) {
			t.Fatalf("POST /v1/ops/settings/reload after the fix: %s, want 200 with 3 keys", got)
		}
		if got := g.ingest(t, late.Token, "events", "", `{"id":"late","n":1}`); got.Status != http.StatusAccepted {
			t.Fatalf("%s after the fix: %s, want 202", late, got)
		}
	})
}

// TestReloadOnSIGHUP uses a poll interval too long to matter: a new key applies on SIGHUP, and
// so does a new operator key read again from its file.
func TestReloadOnSIGHUP(t *testing.T) {
	t.Parallel()
	h := &tenant{Name: "h", Database: "tenant_h"}
	h.Keys = []*apiKey{newKey(t, "h", "admin", "admin", "")}
	g := startGateway(t, gatewayOptions{PollInterval: "1h"}, h)
	g.sql(t, h.key(t, "admin").Token, "", eventsDDL)

	k := newKey(t, "h", "query", "query", "")
	h.Keys = append(h.Keys, k)
	g.writeTenant(t, h)
	if got := g.do(t, http.MethodGet, "/v1/tables", k.Token, nil); got.Status != http.StatusUnauthorized {
		t.Fatalf("%s before any reload (poll interval 1h): %s, want 401", k, got)
	}
	oldOp, newOp := g.Operator, newOperatorKey(t)
	if err := os.WriteFile(filepath.Join(g.dir, "operator.key"), []byte(newOp+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.proc.Signal(t, syscall.SIGHUP)
	poll.Until(t, reloadTimeout, k.String()+" to be accepted after SIGHUP", func() bool {
		return g.do(t, http.MethodGet, "/v1/tables", k.Token, nil).Status == http.StatusOK
	})
	poll.Until(t, reloadTimeout, "the new operator key after SIGHUP", func() bool {
		return g.do(t, http.MethodGet, "/v1/ops/dlq?tenant=h", newOp, nil).Status == http.StatusOK
	})
	if got := g.do(t, http.MethodGet, "/v1/ops/dlq?tenant=h", oldOp, nil); got.Status != http.StatusUnauthorized {
		t.Fatalf("the previous operator key after SIGHUP: %s, want 401", got)
	}
}

// checkRefusal checks a 429 from a limit: code, retryable, Retry-After and the RateLimit-*
// headers.
func checkRefusal(t testing.TB, what string, got gatewaybin.Response, code string, limit int) {
	t.Helper()
	e := got.APIError()
	if got.Status != http.StatusTooManyRequests || e.Code != code || !e.Retryable {
		t.Fatalf("%s: %s, want 429 %s retryable", what, got, code)
	}
	if ra, err := strconv.Atoi(got.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("%s: Retry-After %q, want whole seconds ≥ 1", what, got.Header.Get("Retry-After"))
	}
	if l := got.Header.Get("RateLimit-Limit"); l != strconv.Itoa(limit) {
		t.Errorf("%s: RateLimit-Limit %q, want %d", what, l, limit)
	}
	if rem := got.Header.Get("RateLimit-Remaining"); rem != "0" {
		t.Errorf("%s: RateLimit-Remaining %q, want 0", what, rem)
	}
	if rs, err := strconv.Atoi(got.Header.Get("RateLimit-Reset")); err != nil || rs < 0 {
		t.Errorf("%s: RateLimit-Reset %q, want seconds", what, got.Header.Get("RateLimit-Reset"))
	}
}
