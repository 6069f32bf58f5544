package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/settings"
)

// settingsDir writes a settings directory with one tenant holding key k (nil: no key) and
// returns its path.
func settingsDir(t *testing.T, k *auth.NewKey, extra string) string {
	t.Helper()
	dir := t.TempDir()
	body := "database: acme\n" + extra
	if k != nil {
		body += "keys:\n  " + auth.KeyYAML(*k, settings.Scopes(), nil, time.Time{}) + "\n"
	}
	if err := os.MkdirAll(filepath.Join(dir, "tenants"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tenants", "acme.yaml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestConfigCheckValidatesSettingsAndAccess runs config check over settings directories: a valid
// one is summarised without any secret, an invalid one fails with its findings, and a public
// listener needs keys (or allow_anonymous, which is warned about).
func TestConfigCheckValidatesSettingsAndAccess(t *testing.T) {
	k, err := auth.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimPrefix(k.Token, "wh_"+k.ID+"_")
	withKeys := settingsDir(t, &k, "")
	noKeys := settingsDir(t, nil, "")
	broken := settingsDir(t, &k, "limits: {requests_per_second: -1}\n")
	cases := []struct {
		name, yaml string
		code       int
		want       string
	}{
		{"valid with keys", fmt.Sprintf("settings_dir: %s\nserver:\n  listen: 0.0.0.0:8080\n", withKeys), 0, "# settings: 1 tenants, 1 API keys"},
		{"invalid settings", fmt.Sprintf("settings_dir: %s\n", broken), 1, "tenants/acme.yaml:2"},
		{"public without keys", fmt.Sprintf("settings_dir: %s\nserver:\n  listen: 0.0.0.0:8080\n", noKeys), 1, "is not a loopback address and no API keys are configured"},
		{"public anonymous", fmt.Sprintf("settings_dir: %s\nserver:\n  listen: 0.0.0.0:8080\nauth:\n  allow_anonymous: true\n", noKeys), 0, "# warning: auth.allow_anonymous is true"},
		{"missing settings dir", fmt.Sprintf("settings_dir: %s\n", filepath.Join(noKeys, "nope")), 0, "# settings: 0 tenants"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCmd(t, t.Context(), "config", "check", "--config", writeFile(t, "config.yaml", tc.yaml))
			if code != tc.code || !strings.Contains(out+errs, tc.want) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s\n%s", code, tc.code, tc.want, out, errs)
			}
			for _, s := range []string{k.Token, secret, k.Hash} {
				if strings.Contains(out+errs, s) {
					t.Fatalf("config check printed a key secret or hash:\n%s\n%s", out, errs)
				}
			}
		})
	}
}
