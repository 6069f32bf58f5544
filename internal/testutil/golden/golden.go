// Package golden keeps generated sections of committed files (docs/configuration.md,
// docs/metrics.md) equal to what the code generates.
package golden

import (
	"os"
	"strings"
	"testing"
)

// Section checks that the text of the file at path between the begin and end markers is
// generated. With update it rewrites that text instead; without, a difference fails the test,
// naming fix (the command that regenerates it).
func Section(t testing.TB, path, begin, end, generated, fix string, update bool) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated-section markers %q … %q", path, begin, end)
	}
	want := doc[:i+len(begin)] + generated + doc[j:]
	if want == doc {
		return
	}
	if update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s is out of date with the code that generates it: %s", path, fix)
}
