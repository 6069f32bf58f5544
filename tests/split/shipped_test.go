package split

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/splitdeploy"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// shippedGateway is one wavehouse process a shipped deployment runs: its role config file on this
// machine, its container's variables, and where the deployment mounts files into the container.
type shippedGateway struct {
	Name, Role, Config string
	Env                []string
	Mounts             map[string]string // container path → file or directory here
	// Health is the deployment's healthcheck (compose) or readiness probe (Kubernetes): the
	// wavehouse arguments, with container paths.
	Health []string
}

// pathEnv maps every file and directory the config names into the host paths of the deployment's
// mounts, as WH_* overrides; a path no mount provides fails the test (the container would not
// find it either).
func (g shippedGateway) pathEnv(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(g.Config)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		SettingsDir string `yaml:"settings_dir"`
		Auth        struct {
			OperatorKeyFile string `yaml:"operator_key_file"`
		} `yaml:"auth"`
		Store struct {
			ClickHouse struct {
				PasswordFile string `yaml:"password_file"`
			} `yaml:"clickhouse"`
		} `yaml:"store"`
		Dedupe struct {
			DynamoDB struct {
				AccessKeyIDFile     string `yaml:"access_key_id_file"`
				SecretAccessKeyFile string `yaml:"secret_access_key_file"`
			} `yaml:"dynamodb"`
		} `yaml:"dedupe"`
		MQ struct {
			NATS struct {
				PasswordFile string `yaml:"password_file"`
			} `yaml:"nats"`
		} `yaml:"mq"`
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s: %v", g.Name, err)
	}
	var env []string
	for name, p := range map[string]string{
		"WH_SETTINGS_DIR": c.SettingsDir, "WH_AUTH_OPERATOR_KEY_FILE": c.Auth.OperatorKeyFile,
		"WH_STORE_CLICKHOUSE_PASSWORD_FILE":         c.Store.ClickHouse.PasswordFile,
		"WH_DEDUPE_DYNAMODB_ACCESS_KEY_ID_FILE":     c.Dedupe.DynamoDB.AccessKeyIDFile,
		"WH_DEDUPE_DYNAMODB_SECRET_ACCESS_KEY_FILE": c.Dedupe.DynamoDB.SecretAccessKeyFile,
		"WH_MQ_NATS_PASSWORD_FILE":                  c.MQ.NATS.PasswordFile,
	} {
		if p == "" {
			continue
		}
		host, ok := g.hostPath(p)
		if _, err := os.Stat(host); !ok || err != nil {
			t.Errorf("%s: %s names %s, which the deployment does not mount", g.Name, name, p)
			continue
		}
		env = append(env, name+"="+host)
	}
	return env
}

// hostPath returns the host path of container path p under the longest mount holding it.
func (g shippedGateway) hostPath(p string) (string, bool) {
	best := ""
	for m := range g.Mounts {
		if (p == m || strings.HasPrefix(p, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	if best == "" {
		return "", false
	}
	return filepath.Join(g.Mounts[best], strings.TrimPrefix(p, best)), true
}

// kubeVolume is a Pod volume of a Secret or a ConfigMap, with optional items.
type kubeVolume struct {
	Name   string `yaml:"name"`
	Secret *struct {
		SecretName string `yaml:"secretName"`
		Items      []struct {
			Key  string `yaml:"key"`
			Path string `yaml:"path"`
		} `yaml:"items"`
	} `yaml:"secret"`
	ConfigMap *struct {
		Name  string `yaml:"name"`
		Items []struct {
			Key  string `yaml:"key"`
			Path string `yaml:"path"`
		} `yaml:"items"`
	} `yaml:"configMap"`
}

// materialize writes the volume's files as the kubelet would into a temporary directory and
// returns it; data returns the data of an object by kind and name. Other volumes return "".
func (v kubeVolume) materialize(t *testing.T, data func(kind, name string) map[string]string) string {
	t.Helper()
	files := map[string]string{}
	switch {
	case v.Secret != nil:
		files = data("Secret", v.Secret.SecretName)
		if len(v.Secret.Items) > 0 {
			all := files
			files = map[string]string{}
			for _, it := range v.Secret.Items {
				if _, ok := all[it.Key]; !ok {
					t.Errorf("volume %s: Secret %s has no key %s", v.Name, v.Secret.SecretName, it.Key)
				}
				files[it.Path] = all[it.Key]
			}
		}
	case v.ConfigMap != nil:
		all := data("ConfigMap", v.ConfigMap.Name)
		files = all
		if len(v.ConfigMap.Items) > 0 {
			files = map[string]string{}
			for _, it := range v.ConfigMap.Items {
				files[it.Path] = all[it.Key]
			}
		}
	default:
		return ""
	}
	dir := t.TempDir()
	for p, content := range files {
		path := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mergeData returns a ConfigMap's data or a Secret's stringData, whichever is set.
func mergeData(data, stringData map[string]string) map[string]string {
	if len(stringData) > 0 {
		return stringData
	}
	return data
}

// TestShippedConfigsBoot boots every shipped role config (compose and Kubernetes) as a plain
// process against the test services. Only addresses, paths and namespaces are rewritten
// (listeners on loopback port 0, the servers', the queue's prefix and replicas, files from the
// deployment's mounts); the security settings stay as shipped, and the NATS server enforces the
// users `wavehouse mq permissions` generates for the config (the role connects as its own user
// with the shipped password). Every process becomes ready; on
// each api process a request without a key to /v1/ops/sql is refused 401, the shipped operator
// key runs operator SQL, and operator SQL reading the host's files is refused. The shipped
// healthcheck (compose) or readiness probe (Kubernetes) command, with its paths mapped and the
// ops address the process bound, exits 0 while the process is ready and 1 once it has stopped.
func TestShippedConfigsBoot(t *testing.T) {
	gateways := append(composeGateways(t), kubernetesGateways(t)...)
	if t.Failed() {
		t.FailNow()
	}
	srv := struct {
		ch         *testsvc.ClickHouse
		redis, dyn string
	}{testsvc.ClickHouseServer(t), testsvc.RedisServer(t).Addr, testsvc.DynamoDBServer(t).Endpoint}
	empty, creds := filepath.Join(t.TempDir(), "empty"), filepath.Join(t.TempDir(), "creds")
	for path, content := range map[string]string{empty: "", creds: "shipped\n"} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	booted := map[string]bool{}
	for _, g := range gateways {
		key := g.Config + "|" + g.Role
		if booted[key] {
			continue // api-1 and api-2 share one file
		}
		booted[key] = true
		t.Run(g.Name, func(t *testing.T) {
			prefix := testsvc.UniqueName(t, "whship")
			env := append(append([]string{}, g.Env...), g.pathEnv(t)...)
			env = append(env,
				"WH_SERVER_LISTEN=127.0.0.1:0", "WH_OPS_LISTEN=127.0.0.1:0", "WH_DATA_DIR="+filepath.Join(t.TempDir(), "data"),
				"WH_STORE_CLICKHOUSE_ADDRS="+srv.ch.NativeAddr, "WH_STORE_CLICKHOUSE_HTTP_ADDRS="+srv.ch.HTTPAddr, "WH_STORE_CLICKHOUSE_USER=default", "WH_STORE_CLICKHOUSE_PASSWORD_FILE="+empty,
				"WH_MQ_PREFIX="+prefix, "WH_MQ_NATS_REPLICAS=1", "WH_MQ_NATS_MANAGE_TOPOLOGY=true",
				"WH_CACHE_REDIS_ADDRS="+srv.redis, "WH_CACHE_REDIS_KEY_PREFIX="+prefix+":",
				"WH_DEDUPE_DYNAMODB_ENDPOINT="+srv.dyn, "WH_DEDUPE_DYNAMODB_TABLE="+prefix, "WH_DEDUPE_DYNAMODB_CREATE_TABLE=true",
				"WH_DEDUPE_DYNAMODB_ACCESS_KEY_ID_FILE="+creds, "WH_DEDUPE_DYNAMODB_SECRET_ACCESS_KEY_FILE="+creds)
			env = append(env, "WH_MQ_NATS_URLS="+shippedNATS(t, g, env))
			p := gatewaybin.StartProcess(t, gatewaybin.ProcessConfig{Name: g.Name, Binary: binaryPath,
				Args: []string{"serve", "--config", g.Config}, Env: env, Dir: t.TempDir(), ListenAddrs: true})
			checkShippedHealth(t, g, p, env)
			if g.Role != roleAPI {
				return
			}
			api := gatewaybin.Client{Base: p.APIURL(), HTTP: &http.Client{Timeout: 30 * time.Second}}
			sql := []byte(`{"sql":"SELECT 1"}`)
			ct := http.Header{"Content-Type": {"application/json"}}
			if r := api.Do(t, http.MethodPost, "/v1/ops/sql?tenant=default", ct, sql); r.Status != http.StatusUnauthorized {
				t.Errorf("POST /v1/ops/sql without a key: %s, want 401", r)
			}
			host, _ := g.hostPath(operatorKeyFile(t, g))
			op, err := os.ReadFile(host)
			if err != nil {
				t.Fatal(err)
			}
			auth := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + strings.TrimSpace(string(op))}}
			if r := api.Do(t, http.MethodPost, "/v1/ops/sql?tenant=default", auth, sql); r.Status != http.StatusOK {
				t.Errorf("POST /v1/ops/sql with the shipped operator key: %s, want 200", r)
			}
			if r := api.Do(t, http.MethodPost, "/v1/ops/sql?tenant=default", auth, []byte(`{"sql":"SELECT * FROM file('/etc/passwd', 'LineAsString', 'x String')"}`)); r.Code() != "sql.host_access" {
				t.Errorf("operator SQL reading /etc/passwd: %s, want 403 sql.host_access", r)
			}
		})
	}
	if len(booted) != 6 {
		t.Errorf("booted %d distinct shipped configs, want 6 (compose and Kubernetes: api, ingest, sweeper)", len(booted))
	}
}

// operatorKeyFile returns the operator_key_file the config names; an api config without one
// fails the test (its operator routes could only be reached anonymously or not at all).
func operatorKeyFile(t *testing.T, g shippedGateway) string {
	t.Helper()
	raw, err := os.ReadFile(g.Config)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Auth struct {
			AllowAnonymous  bool   `yaml:"allow_anonymous"`
			OperatorKeyFile string `yaml:"operator_key_file"`
		} `yaml:"auth"`
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if c.Auth.OperatorKeyFile == "" || c.Auth.AllowAnonymous {
		t.Fatalf("%s: auth %+v: a shipped api config needs an operator key and no allow_anonymous", g.Name, c.Auth)
	}
	return c.Auth.OperatorKeyFile
}

// checkShippedHealth runs g's healthcheck against the running process p (exit 0), then stops p
// and runs it again (exit 1); env is p's environment, the ops address p bound added.
func checkShippedHealth(t *testing.T, g shippedGateway, p *gatewaybin.Process, env []string) {
	t.Helper()
	if len(g.Health) < 2 || g.Health[0] != "health" {
		t.Fatalf("%s: healthcheck %q is not wavehouse health", g.Name, g.Health)
	}
	args := slices.Clone(g.Health)
	for i, a := range args {
		if host, ok := g.hostPath(a); ok && strings.HasPrefix(a, "/") {
			args[i] = host
		}
	}
	env = append(slices.Clone(env), "WH_OPS_LISTEN="+strings.TrimPrefix(p.OpsURL(), "http://"))
	if code, out := runBinary(t, env, args...); code != 0 {
		t.Errorf("%s: healthcheck %q of a ready process: exit %d, want 0\n%s", g.Name, g.Health, code, out)
	}
	defer p.Start(t) // the API checks below need it again
	p.Stop(t)
	if code, out := runBinary(t, env, args...); code != 1 {
		t.Errorf("%s: healthcheck %q of a stopped process: exit %d, want 1\n%s", g.Name, g.Health, code, out)
	}
}

// shippedNATS starts a private nats-server enforcing the NATS users `wavehouse mq permissions`
// generates for g's config under env, the password of g's role user being the one g's
// mq.nats.password_file holds, and returns its URL.
func shippedNATS(t *testing.T, g shippedGateway, env []string) string {
	t.Helper()
	users := filepath.Join(t.TempDir(), "users.conf")
	if err := os.WriteFile(users, splitdeploy.Permissions(t, binaryPath, env, "--config", g.Config), 0o600); err != nil {
		t.Fatal(err)
	}
	_, pwFile := natsUser(t, g)
	host, _ := g.hostPath(pwFile)
	pw, err := os.ReadFile(host)
	if err != nil {
		t.Fatalf("%s: mq.nats.password_file: %v", g.Name, err)
	}
	natsEnv := natsConfigEnv() // the other roles' users: any password
	natsEnv = append(natsEnv, "WH_NATS_"+strings.ToUpper(g.Role)+"_PASSWORD="+strings.TrimSpace(string(pw)))
	return testsvc.StartNATS(t, testsvc.WithNATSConfig(users), testsvc.WithNATSEnv(natsEnv...)).URL
}
