package app

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/logbuf"
)

// TestOperatorKeyOfTheEmbeddedDefault: the embedded default (loopback API, no API keys, no
// auth.operator_key_file) generates <data_dir>/operator.key with mode 0600 and logs its path,
// never the key; the anonymous principal is refused 401 auth.anonymous_ops on /v1/ops/sql while
// the generated key runs it. With auth.allow_anonymous and an operator_key_file, the anonymous
// principal is refused the same way, that file's key works and nothing is generated.
func TestOperatorKeyOfTheEmbeddedDefault(t *testing.T) {
	const js = "application/json"
	anonymousRefused := func(t *testing.T, a *App) {
		t.Helper()
		for _, q := range []string{"", "?tenant=default"} {
			r := call(t, "POST", "http://"+a.APIAddr()+"/v1/ops/sql"+q, js, `{"sql":"SELECT 1"}`)
			if msg, _ := r.body["error"].(string); r.code != http.StatusUnauthorized || r.body["code"] != "auth.anonymous_ops" || !strings.Contains(msg, "operator.key") {
				t.Errorf("anonymous POST /v1/ops/sql%s: %d %s, want 401 auth.anonymous_ops naming the key file", q, r.code, r.raw)
			}
		}
		if r := call(t, "POST", "http://"+a.APIAddr()+"/v1/query", js, `{"sql":"SELECT 1"}`); r.code != http.StatusOK {
			t.Errorf("anonymous query: %d %s, want 200", r.code, r.raw)
		}
	}

	t.Run("generated", func(t *testing.T) {
		cfg := testConfig(t)
		var logs logbuf.Buffer
		a := startAppWithLog(t, cfg, slog.New(slog.NewTextHandler(&logs, nil)))
		path := auth.GeneratedOperatorKeyFile(cfg.DataDir)
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("generated key file %s: %v %v, want mode 0600", path, st, err)
		}
		key := gatewaybin.OperatorKey(t, cfg.DataDir)
		if out := logs.String(); !strings.Contains(out, "generated a key file") || !strings.Contains(out, path) || strings.Contains(out, key) {
			t.Errorf("boot log must name %s and never the key:\n%s", path, out)
		}
		anonymousRefused(t, a)
		if r := opsCall(t, a, "POST", "/v1/ops/sql", `{"sql":"SELECT 1"}`); r.code != http.StatusOK {
			t.Fatalf("operator SQL with the generated key: %d %s", r.code, r.raw)
		}
	})

	t.Run("configured", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Auth.AllowAnonymous = true
		key := strings.Repeat("k", 40)
		cfg.Auth.OperatorKeyFile = filepath.Join(t.TempDir(), "op.key")
		if err := os.WriteFile(cfg.Auth.OperatorKeyFile, []byte(key+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		a := startApp(t, cfg)
		anonymousRefused(t, a)
		if r := call(t, "POST", "http://"+a.APIAddr()+"/v1/ops/sql?tenant=default", js, `{"sql":"SELECT 1"}`, "Authorization", "Bearer "+key); r.code != http.StatusOK {
			t.Fatalf("operator SQL with the configured key: %d %s", r.code, r.raw)
		}
		if _, err := os.Stat(auth.GeneratedOperatorKeyFile(cfg.DataDir)); !os.IsNotExist(err) {
			t.Errorf("a key was generated although operator_key_file is set: %v", err)
		}
	})
}
