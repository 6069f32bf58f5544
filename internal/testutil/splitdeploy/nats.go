package splitdeploy

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// NATSUserPrefix starts the NATS user name of every role (`wavehouse mq permissions`' default).
const NATSUserPrefix = "wavehouse-"

// natsAuth is the deployment's NATS users: the nats-server config holding the authorization
// block `wavehouse mq permissions` generated, the passwords it references, and each role's
// password file.
type natsAuth struct {
	config    string
	env       []string
	passwords map[string]string // role → password file
}

// StartNATS starts a private nats-server that enforces the NATS users `wavehouse mq
// permissions` (binary) generates for this deployment, and points every process of it at that
// server as its role's user. Call it before Start.
func (b *Backends) StartNATS(t testing.TB, binary string) *testsvc.NATSProcess {
	t.Helper()
	n := testsvc.StartNATS(t, b.SecureNATS(t, binary)...)
	b.NATSURLs = []string{n.URL}
	return n
}

// StartNATSCluster is StartNATS for a cluster of n nodes.
func (b *Backends) StartNATSCluster(t testing.TB, binary string, n int) *testsvc.NATSCluster {
	t.Helper()
	c := testsvc.StartNATSCluster(t, n, b.SecureNATS(t, binary)...)
	b.NATSURLs = c.URLs()
	return c
}

// SecureNATS gives every role of the deployment its own NATS user with a fresh password and
// returns the options that start nats-servers enforcing the permissions `wavehouse mq
// permissions` (binary) generates for the deployment's config. Processes started afterwards
// connect as their role's user.
func (b *Backends) SecureNATS(t testing.TB, binary string) []testsvc.NATSOption {
	t.Helper()
	dir := t.TempDir()
	a := &natsAuth{passwords: map[string]string{}}
	for _, role := range []string{RoleAPI, RoleIngest, RoleSweeper} {
		var raw [16]byte
		_, _ = rand.Read(raw[:])
		pw := hex.EncodeToString(raw[:])
		file := filepath.Join(dir, role+".password")
		if err := os.WriteFile(file, []byte(pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		a.passwords[role] = file
		a.env = append(a.env, "WH_NATS_"+strings.ToUpper(role)+"_PASSWORD="+pw)
	}
	urls := b.NATSURLs
	if len(urls) == 0 {
		b.NATSURLs = []string{"nats://127.0.0.1:4222"} // not dialled: the command only reads the config
	}
	cfg := filepath.Join(dir, "config.yaml")
	err := os.WriteFile(cfg, []byte(b.Config("permissions", RoleAPI, dir)), 0o600)
	b.NATSURLs = urls
	if err != nil {
		t.Fatal(err)
	}
	a.config = filepath.Join(dir, "nats-users.conf")
	if err := os.WriteFile(a.config, Permissions(t, binary, nil, "--config", cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	b.nats = a
	return []testsvc.NATSOption{testsvc.WithNATSConfig(a.config), testsvc.WithNATSEnv(a.env...)}
}

// NATSPasswordFile returns the password file of role's NATS user ("" before SecureNATS).
func (b *Backends) NATSPasswordFile(role string) string {
	if b.nats == nil {
		return ""
	}
	return b.nats.passwords[role]
}

// Permissions runs `wavehouse mq permissions` with args and the extra environment env (KEY=VALUE)
// and returns its output.
func Permissions(t testing.TB, binary string, env []string, args ...string) []byte {
	t.Helper()
	args = append([]string{"mq", "permissions"}, args...)
	cmd := exec.CommandContext(t.Context(), binary, args...)
	cmd.Env = append(gatewaybin.Env(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("wavehouse %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// checkNoPermissionViolation fails the test when the process log at path reports a NATS
// permissions violation: a call its role makes that the generated permissions do not grant.
func checkNoPermissionViolation(t testing.TB, name, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		return // never started
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(strings.ToLower(line), "permissions violation") {
			t.Errorf("%s: the NATS server refused a call of its role: %s", name, line)
		}
	}
}
