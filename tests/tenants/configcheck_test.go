package tenants_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// newPasswordFile writes a fresh ClickHouse password to a file, registers it with the suite and
// returns the file's path.
func newPasswordFile(t *testing.T) (path, password string) {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	password = "pw-" + hex.EncodeToString(b)
	secrets.add("ClickHouse password", password)
	path = filepath.Join(t.TempDir(), "clickhouse-password")
	if err := os.WriteFile(path, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, password
}

// mustNotContain fails when out holds any of the secrets, naming only their labels.
func mustNotContain(t *testing.T, what, out string, labelled map[string]string) {
	t.Helper()
	for label, v := range labelled {
		if strings.Contains(out, v) {
			t.Errorf("%s contains the %s", what, label)
		}
	}
}

// TestConfigCheckNeverPrintsSecrets validates a settings directory with keys, an operator key
// and a tenant ClickHouse password file with `wavehouse config check`, then a broken one where
// a key was pasted into hash: and a password written inline: the findings name the file and
// line, and the output never holds a key, a secret or a password.
func TestConfigCheckNeverPrintsSecrets(t *testing.T) {
	t.Parallel()
	g := newGateway(t, gatewayOptions{})
	acme := tenantKeys(t, "acme", "tenant_acme")
	pwFile, pw := newPasswordFile(t)
	acme.Extra = fmt.Sprintf("clickhouse:\n  addrs: [\"127.0.0.1:9\"]\n  user: acme\n  password_file: %s\n", pwFile)
	g.writeTenant(t, acme)
	labelled := map[string]string{"operator key": g.Operator, "ClickHouse password": pw}
	for _, k := range acme.Keys {
		labelled[k.String()] = k.Token
		labelled["secret of "+k.String()] = strings.SplitN(k.Token, "_", 3)[2]
	}

	code, out := gatewaybinRun(t, nil, "config", "check", "--config", g.CfgPath)
	secrets.record(t, "config-check-valid", out)
	if code != 0 {
		t.Fatalf("config check of a valid settings directory: exit %d:\n%s", code, out)
	}
	mustNotContain(t, "config check output (valid settings)", out, labelled)

	// A key pasted into hash: and a password inline are both findings; neither value is echoed.
	pasted := newKey(t, "oops", "pasted", "query", "")
	_, inline := newPasswordFile(t)
	labelled["pasted "+pasted.String()] = pasted.Token
	labelled["inline ClickHouse password"] = inline
	g.writeRaw(t, "tenants/oops.yaml", fmt.Sprintf("database: tenant_oops\nkeys:\n  - {id: %s, hash: %s, scopes: [query]}\nclickhouse:\n  addrs: [\"127.0.0.1:9\"]\n  password: %s\n",
		pasted.ID, pasted.Token, inline))
	code, out = gatewaybinRun(t, nil, "config", "check", "--config", g.CfgPath)
	secrets.record(t, "config-check-invalid", out)
	if code == 0 {
		t.Fatalf("config check of an invalid settings directory exited 0:\n%s", out)
	}
	mustNotContain(t, "config check output (invalid settings)", out, labelled)
	mustContain(t, "config check output (invalid settings)", out, "tenants/oops.yaml:3", "tenants/oops.yaml:6")
}

// TestPasswordNeverLogged runs a tenant whose own ClickHouse server refuses its password (read
// from password_file) next to a tenant on the default server: the refused tenant's errors, in
// answers and logs, never carry the password, and the other tenant is unaffected.
func TestPasswordNeverLogged(t *testing.T) {
	t.Parallel()
	ch := testsvc.ClickHouseServer(t)
	db := ch.CreateDatabase(t, "whten")
	pwFile, pw := newPasswordFile(t)
	remote := &tenant{Name: "remote", Database: db + "_remote", Keys: []*apiKey{newKey(t, "remote", "admin", "admin", "")},
		Extra: fmt.Sprintf("clickhouse:\n  addrs: [%q]\n  user: default\n  password_file: %s\n", ch.NativeAddr, pwFile)}
	fine := &tenant{Name: "fine", Database: db, Keys: []*apiKey{newKey(t, "fine", "admin", "admin", "")}}
	g := startGateway(t, gatewayOptions{
		Store: fmt.Sprintf("store:\n  backend: clickhouse\n  clickhouse:\n    addrs: [%q]\n    database: %s\n", ch.NativeAddr, db),
	}, remote, fine)

	got := g.do(t, http.MethodPost, "/v1/ops/sql", remote.Keys[0].Token, []byte(`{"sql":"SELECT 1"}`))
	if got.Status != http.StatusServiceUnavailable || got.Code() != "store.unavailable" {
		t.Fatalf("ops/sql as tenant remote with a wrong ClickHouse password: %s, want 503 store.unavailable (credentials are the operator's to fix; rows must wait, not be dead-lettered)", got)
	}
	if strings.Contains(string(got.Body), pw) {
		t.Fatalf("the answer to tenant remote carries its ClickHouse password")
	}
	t.Logf("tenant remote's answer: %s", got)
	g.sql(t, fine.Keys[0].Token, "", eventsDDL)
	g.proc.Stop(t)
	if strings.Contains(g.proc.Output(), pw) {
		t.Fatalf("the gateway's output carries tenant remote's ClickHouse password")
	}
}
