package tenants_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

// secrets remembers every secret the suite creates (API keys and their secret halves, operator
// keys, ClickHouse passwords) and hands out the files that receive the output of every process
// the suite runs, so that TestMain can grep all of it at the end.
var secrets = &secretRegistry{values: map[string]string{}}

type secretRegistry struct {
	dir string // set by TestMain

	mu     sync.Mutex
	values map[string]string // secret → what it is; the value itself is never printed
	files  int
}

// add registers a secret under a label that names it without revealing it.
func (r *secretRegistry) add(label, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.values[value] = label
}

// outputPath returns a new file name under the scanned directory for the output of one process
// of test t.
func (r *secretRegistry) outputPath(t testing.TB, what string) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files++
	name := regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name()+"-"+what, "_")
	return filepath.Join(r.dir, fmt.Sprintf("%03d-%s.log", r.files, name))
}

// record writes output (of a subcommand run to completion) to a scanned file.
func (r *secretRegistry) record(t testing.TB, what, output string) {
	t.Helper()
	if err := os.WriteFile(r.outputPath(t, what), []byte(output), 0o600); err != nil {
		t.Fatal(err)
	}
}

// scan greps every output file for every secret and returns one line per leak.
func (r *secretRegistry) scan() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	leaks, _, _ := scanDir(r.dir, r.values)
	return leaks
}

// summary says what scan covered.
func (r *secretRegistry) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, files, size := scanDir(r.dir, r.values)
	return fmt.Sprintf("no secret found: %d secrets grepped in %d output files (%d bytes)", len(r.values), files, size)
}

// scanDir reports, for every file under dir, the labels of the secrets it contains.
func scanDir(dir string, values map[string]string) (leaks []string, files int, size int64) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return []string{fmt.Sprintf("cannot read the output directory %s: %v", dir, err)}, 0, 0
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			leaks = append(leaks, fmt.Sprintf("cannot read %s: %v", e.Name(), err))
			continue
		}
		files++
		size += int64(len(b))
		text := string(b)
		var found []string
		for v, label := range values {
			if strings.Contains(text, v) {
				found = append(found, label)
			}
		}
		sort.Strings(found)
		for _, label := range found {
			leaks = append(leaks, fmt.Sprintf("%s contains the %s", e.Name(), label))
		}
	}
	return leaks, files, size
}

// TestSecretScanFindsPlantedSecret proves the end-of-suite grep can fail: a planted secret is
// reported by its label, in the file that holds it, and never by its value.
func TestSecretScanFindsPlantedSecret(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const secret = "wh_0123456789ab_planted"
	if err := os.WriteFile(filepath.Join(dir, "clean.log"), []byte("level=INFO msg=ready\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dirty.log"), []byte("level=WARN key="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	leaks, files, _ := scanDir(dir, map[string]string{secret: "planted test key"})
	if files != 2 || len(leaks) != 1 || leaks[0] != "dirty.log contains the planted test key" {
		t.Fatalf("scan = %q over %d files, want one leak in dirty.log", leaks, files)
	}
}
