package settings

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestReloadHandler(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tenants/acme.yaml", "database: acme\n")
	m := newManager(t, dir, nil)
	h := m.ReloadHandler()
	call := func() (int, map[string]any) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/ops/settings/reload", nil))
		var body map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("body %s", w.Body.String())
		}
		return w.Code, body
	}
	write(t, dir, "tenants/globex.yaml", "database: globex\n")
	if code, body := call(); code != http.StatusOK || body["changed"] != true || body["tenants"] != 2.0 {
		t.Fatalf("valid reload: %d %v", code, body)
	}
	write(t, dir, "tenants/globex.yaml", "database: globex\nextra: 1\n")
	code, body := call()
	findings, _ := body["details"].([]any)
	if code != http.StatusUnprocessableEntity || body["code"] != "settings.invalid" || len(findings) != 1 {
		t.Fatalf("invalid reload: %d %v", code, body)
	}
	if f := findings[0].(map[string]any); f["file"] != "tenants/globex.yaml" || f["line"] != 2.0 {
		t.Fatalf("finding %v", f)
	}
	_ = m.Close(t.Context())
	if code, body := call(); code != http.StatusServiceUnavailable {
		t.Fatalf("after close: %d %v", code, body)
	}
}
