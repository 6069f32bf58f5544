package split

import (
	"bytes"
	"errors"
	"flag"
	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// update rewrites the committed `wavehouse mq manifests` output from the binary.
var update = flag.Bool("update", false, "rewrite deployments/nats/manifests from the binary")

// The topology the deployments are written for: the defaults of `wavehouse mq manifests`.
const (
	deployPrefix     = "wh"
	deployPartitions = 4
	deployReplicas   = 3
)

// manifestFiles maps each --format of `wavehouse mq manifests` to its committed output.
var manifestFiles = map[string]string{
	"nack": "deployments/nats/manifests/nack.yaml",
	"json": "deployments/nats/manifests/jetstream.json",
}

// TestDeploymentYAMLParses parses every YAML document under deployments/.
func TestDeploymentYAMLParses(t *testing.T) {
	n := 0
	err := filepath.WalkDir(filepath.Join(repoRoot, "deployments"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return err
		}
		docs := yamlDocs(t, path)
		if len(docs) == 0 {
			t.Errorf("%s: no YAML document", rel(path))
		}
		n += len(docs)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("parsed only %d YAML documents under deployments/", n)
	}
}

// TestManifestsMatchBinary requires the committed JetStream manifests to equal what the binary
// generates now (run with -update to regenerate them).
func TestManifestsMatchBinary(t *testing.T) {
	for format, file := range manifestFiles {
		t.Run(format, func(t *testing.T) {
			want := generateManifests(t, format)
			path := filepath.Join(repoRoot, file)
			if *update {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (regenerate: go test ./tests/split -run TestManifestsMatchBinary -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s differs from `wavehouse mq manifests --format %s`; regenerate with go test ./tests/split -run TestManifestsMatchBinary -update", file, format)
			}
		})
	}
}

// generateManifests runs `wavehouse mq manifests --format format` for the deployment topology.
func generateManifests(t *testing.T, format string) []byte {
	t.Helper()
	args := []string{"mq", "manifests", "--format", format, "--prefix", deployPrefix,
		"--partitions", strconv.Itoa(deployPartitions), "--replicas", strconv.Itoa(deployReplicas)}
	cmd := exec.CommandContext(t.Context(), binaryPath, args...)
	cmd.Env = gatewaybin.Env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("wavehouse %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// TestComposeSplit checks deployments/compose/split.yaml: the services of the split topology
// exist, every wavehouse service mounts a role config that passes `wavehouse config check`
// (with the service's environment, and every file the config names found where the service
// mounts it) and runs exactly the role its name says, and every mounted NATS config passes
// `nats-server -t`.
func TestComposeSplit(t *testing.T) { composeGateways(t) }

// composeGateways runs the checks of TestComposeSplit and returns the wavehouse services.
func composeGateways(t *testing.T) []shippedGateway {
	dir := filepath.Join(repoRoot, "deployments", "compose")
	docs := yamlDocs(t, filepath.Join(dir, "split.yaml"))
	if len(docs) != 1 {
		t.Fatalf("split.yaml: %d documents, want 1", len(docs))
	}
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Volumes     []string          `yaml:"volumes"`
			Secrets     []string          `yaml:"secrets"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
		Secrets map[string]struct {
			File string `yaml:"file"`
		} `yaml:"secrets"`
	}
	if err := docs[0].Decode(&compose); err != nil {
		t.Fatalf("split.yaml: %v", err)
	}
	var names []string
	for name := range compose.Services {
		names = append(names, name)
	}
	slices.Sort(names)
	want := []string{"api-1", "api-2", "clickhouse", "dynamodb", "ingest-1", "ingest-2", "nats-1", "nats-2", "nats-3", "redis", "sweeper"}
	if !slices.Equal(names, want) {
		t.Fatalf("services %v, want %v", names, want)
	}
	roles := map[string]int{}
	var gateways []shippedGateway
	for _, name := range names {
		svc := compose.Services[name]
		mounts := map[string]string{}
		for _, v := range svc.Volumes {
			parts := strings.Split(v, ":")
			if len(parts) >= 2 && strings.HasPrefix(parts[0], ".") {
				host := filepath.Join(dir, parts[0])
				if _, err := os.Stat(host); err != nil {
					t.Errorf("%s: volume %q: %v", name, v, err)
				}
				mounts[parts[1]] = host
			}
		}
		switch {
		case strings.HasPrefix(name, "nats-"):
			conf := mounts["/etc/nats/nats.conf"]
			if conf == "" || !slices.Contains(svc.Command, "/etc/nats/nats.conf") {
				t.Errorf("%s: does not mount and use /etc/nats/nats.conf", name)
				continue
			}
			checkNATSConfig(t, conf, natsConfigEnv())
		case len(svc.Command) > 0 && svc.Command[0] == "serve":
			role := strings.TrimRight(name, "-0123456789")
			roles[role]++
			if !slices.Equal(svc.Command, []string{"serve", "--config", "/etc/wavehouse/config.yaml"}) {
				t.Errorf("%s: command %q", name, svc.Command)
			}
			if want := []string{"CMD", "/usr/local/bin/wavehouse", "health", "--config", "/etc/wavehouse/config.yaml"}; !slices.Equal(svc.Healthcheck.Test, want) {
				t.Errorf("%s: healthcheck %q, want %q (readiness of the config it serves)", name, svc.Healthcheck.Test, want)
			}
			cfg := mounts["/etc/wavehouse/config.yaml"]
			if cfg == "" {
				t.Errorf("%s: mounts no /etc/wavehouse/config.yaml", name)
				continue
			}
			var env []string
			for k, v := range svc.Environment {
				env = append(env, k+"="+v)
			}
			for _, s := range svc.Secrets {
				if sec, ok := compose.Secrets[s]; !ok {
					t.Errorf("%s: secret %q is not defined", name, s)
				} else if _, err := os.Stat(filepath.Join(dir, sec.File)); err != nil {
					t.Errorf("%s: secret %q: %v", name, s, err)
				} else {
					mounts["/run/secrets/"+s] = filepath.Join(dir, sec.File)
				}
			}
			g := shippedGateway{Name: name, Role: role, Config: cfg, Env: env, Mounts: mounts}
			if len(svc.Healthcheck.Test) > 2 {
				g.Health = svc.Healthcheck.Test[2:] // after CMD and the binary
			}
			checkRoleConfig(t, name, cfg, append(env, g.pathEnv(t)...), role)
			gateways = append(gateways, g)
		}
	}
	if roles["api"] != 2 || roles["ingest"] != 2 || roles["sweeper"] != 1 {
		t.Errorf("wavehouse processes per role %v, want api 2, ingest 2, sweeper 1", roles)
	}
	return gateways
}

// TestKubernetesSplit checks deployments/kubernetes: one Deployment and one Service per role,
// each Deployment's config (from the ConfigMap) passes `wavehouse config check` with the pod's
// WH_* variables and runs exactly its role, the NATS ConfigMap carries
// deployments/nats/kubernetes.conf and the NATS users deployments/nats/kubernetes-users.conf and
// that config passes `nats-server -t`, and every resource
// of the kustomization exists. Every file a role config names must be mounted by its Deployment.
func TestKubernetesSplit(t *testing.T) { kubernetesGateways(t) }

// kubernetesGateways runs the checks of TestKubernetesSplit and returns the wavehouse
// Deployments, their Secret and ConfigMap volumes written out under a temporary directory.
func kubernetesGateways(t *testing.T) []shippedGateway {
	dir := filepath.Join(repoRoot, "deployments", "kubernetes")
	type object struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Data       map[string]string `yaml:"data"`
		StringData map[string]string `yaml:"stringData"`
		Resources  []string          `yaml:"resources"`
		Spec       struct {
			Replicas *int `yaml:"replicas"`
			Template struct {
				Spec struct {
					Containers []struct {
						Args           []string `yaml:"args"`
						ReadinessProbe struct {
							Exec struct {
								Command []string `yaml:"command"`
							} `yaml:"exec"`
						} `yaml:"readinessProbe"`
						Env []struct {
							Name  string `yaml:"name"`
							Value string `yaml:"value"`
						} `yaml:"env"`
						VolumeMounts []struct {
							Name      string `yaml:"name"`
							MountPath string `yaml:"mountPath"`
						} `yaml:"volumeMounts"`
					} `yaml:"containers"`
					Volumes []kubeVolume `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	objects := map[string]object{} // kind/name
	var kustomize []string
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		for _, doc := range yamlDocs(t, f) {
			var o object
			if err := doc.Decode(&o); err != nil {
				t.Fatalf("%s: %v", rel(f), err)
			}
			if o.Kind == "Kustomization" {
				kustomize = o.Resources
				continue
			}
			if o.Kind == "" || o.Metadata.Name == "" {
				t.Errorf("%s: a document without kind or metadata.name", rel(f))
			}
			objects[o.Kind+"/"+o.Metadata.Name] = o
		}
	}
	for _, r := range kustomize {
		if _, err := os.Stat(filepath.Join(dir, r)); err != nil {
			t.Errorf("kustomization resource %s: %v", r, err)
		}
	}
	if len(kustomize) != len(files)-1 {
		t.Errorf("kustomization lists %d resources, the directory has %d other YAML files", len(kustomize), len(files)-1)
	}
	cm, ok := objects["ConfigMap/wavehouse-config"]
	if !ok {
		t.Fatal("no ConfigMap wavehouse-config")
	}
	var gateways []shippedGateway
	for role, replicas := range map[string]int{"api": 2, "ingest": 2, "sweeper": 1} {
		name := "wavehouse-" + role
		d, ok := objects["Deployment/"+name]
		if !ok {
			t.Errorf("no Deployment %s", name)
			continue
		}
		if _, ok := objects["Service/"+name]; !ok {
			t.Errorf("no Service %s", name)
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != replicas {
			t.Errorf("Deployment %s: replicas %v, want %d", name, d.Spec.Replicas, replicas)
		}
		if len(d.Spec.Template.Spec.Containers) != 1 {
			t.Errorf("Deployment %s: %d containers, want 1", name, len(d.Spec.Template.Spec.Containers))
			continue
		}
		c := d.Spec.Template.Spec.Containers[0]
		key := role + ".yaml"
		if !slices.Equal(c.Args, []string{"serve", "--config", "/etc/wavehouse/" + key}) {
			t.Errorf("Deployment %s: args %q", name, c.Args)
		}
		if want := []string{"/usr/local/bin/wavehouse", "health", "--config", "/etc/wavehouse/" + key}; !slices.Equal(c.ReadinessProbe.Exec.Command, want) {
			t.Errorf("Deployment %s: readiness probe %q, want %q", name, c.ReadinessProbe.Exec.Command, want)
		}
		text, ok := cm.Data[key]
		if !ok {
			t.Errorf("ConfigMap wavehouse-config has no %s", key)
			continue
		}
		path := filepath.Join(t.TempDir(), key)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		var env []string
		for _, e := range c.Env {
			v := e.Value
			if v == "" {
				v = name + "-pod" // valueFrom: a stand-in value of the same kind
			}
			env = append(env, e.Name+"="+v)
		}
		g := shippedGateway{Name: "Deployment " + name, Role: role, Config: path, Env: env, Mounts: map[string]string{}}
		if cmd := c.ReadinessProbe.Exec.Command; len(cmd) > 1 {
			g.Health = cmd[1:] // after the binary
		}
		vols := map[string]kubeVolume{}
		for _, v := range d.Spec.Template.Spec.Volumes {
			vols[v.Name] = v
		}
		for _, m := range c.VolumeMounts {
			v, ok := vols[m.Name]
			if !ok {
				t.Errorf("Deployment %s: volumeMount %q names no volume", name, m.Name)
				continue
			}
			if host := v.materialize(t, func(kind, name string) map[string]string {
				o := objects[kind+"/"+name]
				return map[string]string(mergeData(o.Data, o.StringData))
			}); host != "" {
				g.Mounts[m.MountPath] = host
			}
		}
		checkRoleConfig(t, g.Name, path, append(env, g.pathEnv(t)...), role)
		gateways = append(gateways, g)
	}
	nats, ok := objects["ConfigMap/nats-config"]
	if !ok {
		t.Fatal("no ConfigMap nats-config")
	}
	want, err := os.ReadFile(filepath.Join(repoRoot, "deployments", "nats", "kubernetes.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if nats.Data["nats.conf"] != string(want) {
		t.Error("ConfigMap nats-config nats.conf differs from deployments/nats/kubernetes.conf")
	}
	users, err := os.ReadFile(filepath.Join(repoRoot, natsUsersFiles["kubernetes"]))
	if err != nil {
		t.Fatal(err)
	}
	if nats.Data["kubernetes-users.conf"] != string(users) {
		t.Error("ConfigMap nats-config kubernetes-users.conf differs from " + natsUsersFiles["kubernetes"])
	}
	if _, ok := objects["StatefulSet/nats"]; !ok {
		t.Error("no StatefulSet nats")
	}
	checkNATSConfig(t, filepath.Join(repoRoot, "deployments", "nats", "kubernetes.conf"), append(natsConfigEnv(), "POD_NAME=nats-0"))
	return gateways
}

// checkRoleConfig runs `wavehouse config check` on path with env and requires success, the
// single role want, and the queue topology the committed manifests were generated for.
func checkRoleConfig(t *testing.T, name, path string, env []string, want string) {
	t.Helper()
	code, out := runBinary(t, env, "config", "check", "--config", path)
	if code != 0 {
		t.Errorf("%s: wavehouse config check --config %s: exit %d\n%s", name, rel(path), code, out)
		return
	}
	// The healthcheck reads the same config: nothing serves it here, so it must fail, probing
	// the ops listener on loopback (the process it checks shares the container).
	if code, out := runBinary(t, env, "health", "--config", path, "--timeout", "1s"); code != 0 &&
		(code != 1 || !strings.Contains(out, "http://127.0.0.1:9090/readyz")) {
		t.Errorf("%s: wavehouse health --config %s: exit %d, want a probe of http://127.0.0.1:9090/readyz\n%s", name, rel(path), code, out)
	}
	effective := out[strings.Index(out, "\n")+1:]
	var cfg struct {
		Roles string `yaml:"roles"`
		MQ    struct {
			Backend    string `yaml:"backend"`
			Prefix     string `yaml:"prefix"`
			Partitions int    `yaml:"partitions"`
			NATS       struct {
				Replicas int `yaml:"replicas"`
			} `yaml:"nats"`
		} `yaml:"mq"`
	}
	if err := yaml.Unmarshal([]byte(stripTrailer(effective)), &cfg); err != nil {
		t.Errorf("%s: effective config: %v\n%s", name, err, out)
		return
	}
	if cfg.Roles != want {
		t.Errorf("%s: roles %q, want %q", name, cfg.Roles, want)
	}
	if cfg.MQ.Backend != "nats" || cfg.MQ.Prefix != deployPrefix || cfg.MQ.Partitions != deployPartitions || cfg.MQ.NATS.Replicas != deployReplicas {
		t.Errorf("%s: mq %+v does not match the committed manifests (nats, prefix %s, %d partitions, R%d)",
			name, cfg.MQ, deployPrefix, deployPartitions, deployReplicas)
	}
}

// stripTrailer drops the "configuration is valid" line config check prints on stderr, which
// CombinedOutput interleaves after the YAML.
func stripTrailer(s string) string {
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		if line != "configuration is valid" {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// checkNATSConfig runs `nats-server -t -c path` when a nats-server binary is available.
func checkNATSConfig(t *testing.T, path string, env []string) {
	t.Helper()
	bin := natsServerBinary()
	if bin == "" {
		t.Logf("no nats-server binary (WH_NATS_SERVER_BIN, bin/nats-server, PATH): %s not syntax-checked", rel(path))
		return
	}
	cmd := exec.CommandContext(t.Context(), bin, "-t", "-c", path)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("nats-server -t -c %s: %v\n%s", rel(path), err, out)
	}
}

// natsServerBinary finds the nats-server the test tooling uses, or "".
func natsServerBinary() string {
	for _, p := range []string{os.Getenv("WH_NATS_SERVER_BIN"), filepath.Join(repoRoot, "bin", "nats-server"), "/tmp/nats-server"} {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	p, _ := exec.LookPath("nats-server")
	return p
}

// yamlDocs parses every document of a YAML file.
func yamlDocs(t *testing.T, path string) []*yaml.Node {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", rel(path), err)
		}
		docs = append(docs, &n)
	}
}

// rel names path relative to the repository root.
func rel(path string) string {
	if r, err := filepath.Rel(repoRoot, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}
