package integration

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// quickstartAddr is the API address the README's quickstart talks to (config.yaml's
// server.listen); the test rewrites it to the address the process bound.
const quickstartAddr = "127.0.0.1:8080"

// TestReadmeQuickstart runs the README's quickstart as written: the repository's config.yaml
// (only its listeners moved to port 0, the engine library from the test services), then the
// README's shell block in the gateway's working directory with curl, as a newcomer pastes it
// into a second terminal. Every command must succeed (no error body, the operator SQL included,
// which reads data/operator.key the gateway generated) and the query must return the three rows.
func TestReadmeQuickstart(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		testsvc.Missing(t, "curl is not installed")
	}
	root, err := gatewaybin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script := quickstartScript(t, string(readme))
	dir := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join(root, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "listen: "+quickstartAddr) {
		t.Fatalf("config.yaml no longer serves the API on %s, which the README's quickstart uses", quickstartAddr)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	p := gatewaybin.StartProcess(t, gatewaybin.ProcessConfig{
		Name: "quickstart", Binary: binaryPath, Args: []string{"serve", "--config", "config.yaml"}, Dir: dir,
		Env:         []string{"WH_SERVER_LISTEN=127.0.0.1:0", "WH_OPS_LISTEN=127.0.0.1:0", "CHDB_LIB_PATH=" + testsvc.CHDBLib(t)},
		ListenAddrs: true,
	})
	script = strings.ReplaceAll(script, quickstartAddr, strings.TrimPrefix(p.APIURL(), "http://"))

	cmd := exec.CommandContext(t.Context(), "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = gatewaybin.Env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the quickstart failed: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	var answers []map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var a map[string]any
		if err := dec.Decode(&a); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the quickstart printed something other than JSON answers: %v\n%s", err, out)
		}
		answers = append(answers, a)
	}
	if len(answers) != 4 {
		t.Fatalf("the quickstart printed %d answers, want 4 (DDL, two ingests, query):\n%s", len(answers), out)
	}
	for i, a := range answers {
		if code, ok := a["code"]; ok {
			t.Errorf("command %d of the quickstart answered error %v:\n%s", i+1, code, out)
		}
	}
	var users []string
	rows, _ := answers[3]["data"].([]any)
	for _, r := range rows {
		m, _ := r.(map[string]any)
		u, _ := m["user"].(string)
		users = append(users, u)
	}
	if strings.Join(users, ",") != "ann,bob,cé" {
		t.Errorf("the quickstart's query returned users %q, want ann, bob, cé:\n%s", users, out)
	}

	// The README's ClickHouse-interface block, run after the quickstart against the same table.
	chScript := strings.ReplaceAll(readmeBlock(t, string(readme), "ClickHouse clients work unchanged", "?query="),
		quickstartAddr, strings.TrimPrefix(p.APIURL(), "http://"))
	cmd = exec.CommandContext(t.Context(), "bash", "-euo", "pipefail", "-c", chScript)
	cmd.Dir, cmd.Env = dir, gatewaybin.Env()
	stderr.Reset()
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("the README's ClickHouse-interface block failed: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	if want := "ann\t1\nbob\t2\ncé\t3\ndan\t4\n"; string(out) != want {
		t.Errorf("the README's ClickHouse-interface block printed %q, want %q", out, want)
	}
}

// quickstartScript returns the README's first sh block after "In a second terminal".
func quickstartScript(t *testing.T, readme string) string {
	t.Helper()
	return readmeBlock(t, readme, "In a second terminal", "/v1/ops/sql")
}

// readmeBlock returns the README's first sh block after the text after, which must contain
// mustContain.
func readmeBlock(t *testing.T, readme, after, mustContain string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, after)
	if !ok {
		t.Fatalf("README.md has no %q", after)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatalf("README.md has no sh block after %q", after)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok || !strings.Contains(block, mustContain) {
		t.Fatalf("README.md's block after %q is not closed or lacks %q:\n%s", after, mustContain, block)
	}
	return block
}
