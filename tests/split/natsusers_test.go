package split

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/wavehouse/wavehouse/internal/testutil/splitdeploy"
)

// natsUsersFiles maps each deployment to the committed `wavehouse mq permissions` output its
// nats-server configs include.
var natsUsersFiles = map[string]string{
	"compose":    "deployments/nats/compose-users.conf",
	"kubernetes": "deployments/nats/kubernetes-users.conf",
}

// TestNATSUsersMatchBinary requires the committed NATS users of each deployment to equal what
// `wavehouse mq permissions` generates from every one of its role configs (so the role configs
// cannot drift apart either; run with -update to regenerate), and every role config to connect
// as its own user, wavehouse-<role>, with a password file the deployment mounts.
func TestNATSUsersMatchBinary(t *testing.T) {
	for deployment, gateways := range map[string][]shippedGateway{"compose": composeGateways(t), "kubernetes": kubernetesGateways(t)} {
		t.Run(deployment, func(t *testing.T) {
			file := natsUsersFiles[deployment]
			path := filepath.Join(repoRoot, file)
			for i, g := range gateways {
				want := splitdeploy.Permissions(t, binaryPath, append(g.Env, g.pathEnv(t)...), "--config", g.Config)
				if *update && i == 0 {
					if err := os.WriteFile(path, want, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				got, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (regenerate: go test ./tests/split -run TestNATSUsersMatchBinary -update)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from `wavehouse mq permissions` for %s; regenerate with go test ./tests/split -run TestNATSUsersMatchBinary -update", file, g.Name)
				}
				user, pwFile := natsUser(t, g)
				if user != splitdeploy.NATSUserPrefix+g.Role {
					t.Errorf("%s: mq.nats.user %q, want %q (its role's user)", g.Name, user, splitdeploy.NATSUserPrefix+g.Role)
				}
				if host, ok := g.hostPath(pwFile); !ok || pwFile == "" {
					t.Errorf("%s: mq.nats.password_file %q is not mounted", g.Name, pwFile)
				} else if _, err := os.Stat(host); err != nil {
					t.Errorf("%s: mq.nats.password_file: %v", g.Name, err)
				}
			}
		})
	}
}

// natsUser returns the NATS user and password file a gateway's config names.
func natsUser(t *testing.T, g shippedGateway) (user, passwordFile string) {
	t.Helper()
	raw, err := os.ReadFile(g.Config)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		MQ struct {
			NATS struct {
				User         string `yaml:"user"`
				PasswordFile string `yaml:"password_file"`
			} `yaml:"nats"`
		} `yaml:"mq"`
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s: %v", g.Name, err)
	}
	return c.MQ.NATS.User, c.MQ.NATS.PasswordFile
}

// TestComposeNATSPasswordsAgree requires the passwords the compose nats services read
// (secrets/nats.env, the variables deployments/nats/compose-users.conf references) to be the
// ones the wavehouse services read from their nats_<role>_password secrets.
func TestComposeNATSPasswordsAgree(t *testing.T) {
	vars := envFile(t, filepath.Join(repoRoot, "deployments", "compose", "secrets", "nats.env"))
	for _, role := range []string{roleAPI, roleIngest, roleSweeper} {
		raw, err := os.ReadFile(filepath.Join(repoRoot, "deployments", "compose", "secrets", "nats_"+role+"_password"))
		if err != nil {
			t.Fatal(err)
		}
		key := "WH_NATS_" + strings.ToUpper(role) + "_PASSWORD"
		if got := vars[key]; got == "" || got != strings.TrimSpace(string(raw)) {
			t.Errorf("secrets/nats.env %s does not hold secrets/nats_%s_password", key, role)
		}
	}
}

// envFile reads KEY=VALUE lines (a compose env_file).
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// natsConfigEnv is the environment `nats-server -t` needs for a shipped NATS config: the
// passwords its users reference (any value).
func natsConfigEnv() []string {
	var env []string
	for _, role := range []string{roleAPI, roleIngest, roleSweeper} {
		env = append(env, "WH_NATS_"+strings.ToUpper(role)+"_PASSWORD=checked")
	}
	return env
}
