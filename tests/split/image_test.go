package split

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestContainerImage checks what `make image` builds without a Docker engine: the Dockerfile's
// build stage copies files that exist and builds a package that exists, .dockerignore keeps
// bin/, data/ and the example secrets out of the context, and the tags the target gives are the
// images the Kubernetes Deployments and the compose services run.
func TestContainerImage(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(repoRoot, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	docker := read("deployments/Dockerfile")
	copies := 0
	for _, m := range regexp.MustCompile(`(?m)^COPY\s+(.+)$`).FindAllStringSubmatch(docker, -1) {
		f := strings.Fields(m[1])
		if strings.HasPrefix(f[0], "--from=") {
			continue
		}
		for _, src := range f[:len(f)-1] {
			copies++
			if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil {
				t.Errorf("Dockerfile copies %s: %v", src, err)
			}
		}
	}
	build := regexp.MustCompile(`go build .* (\./\S+)`).FindStringSubmatch(docker)
	if copies < 2 || build == nil {
		t.Fatalf("Dockerfile: %d sources copied, build %v; want go.mod, go.sum, the tree and a go build of ./cmd/wavehouse", copies, build)
	}
	if _, err := os.Stat(filepath.Join(repoRoot, build[1], "main.go")); err != nil {
		t.Errorf("Dockerfile builds %s: %v", build[1], err)
	}
	ignored := map[string]bool{}
	for _, l := range strings.Split(read(".dockerignore"), "\n") {
		ignored[strings.TrimSuffix(strings.TrimSpace(l), "/")] = true
	}
	for _, p := range []string{"bin", "data", "deployments/compose/secrets"} {
		if !ignored[p] {
			t.Errorf(".dockerignore does not exclude %s/", p)
		}
	}
	mk := read("Makefile")
	image := regexp.MustCompile(`(?m)^IMAGE\s*\?=\s*(\S+)`).FindStringSubmatch(mk)
	target := regexp.MustCompile(`(?m)^image:.*\n\t(.+)$`).FindStringSubmatch(mk)
	if image == nil || target == nil || !strings.Contains(target[1], "docker build -f deployments/Dockerfile") ||
		!strings.Contains(target[1], "-t $(IMAGE)") || !strings.Contains(target[1], "-t wavehouse:local") || !strings.HasSuffix(target[1], " .") {
		t.Fatalf("Makefile: IMAGE %v, image target %v; want docker build -f deployments/Dockerfile -t $(IMAGE) -t wavehouse:local .", image, target)
	}
	for _, f := range []string{"api", "ingest", "sweeper"} {
		for _, m := range regexp.MustCompile(`image:\s*(\S+)`).FindAllStringSubmatch(read("deployments/kubernetes/"+f+".yaml"), -1) {
			if m[1] != image[1] {
				t.Errorf("deployments/kubernetes/%s.yaml runs %s, make image builds %s", f, m[1], image[1])
			}
		}
	}
	if !strings.Contains(read("deployments/compose/split.yaml"), "image: wavehouse:local") {
		t.Error("deployments/compose/split.yaml does not run wavehouse:local (the compose tag of make image)")
	}
}
