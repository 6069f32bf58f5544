package config

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated table in docs/configuration.md")

const (
	docPath    = "../../docs/configuration.md"
	beginTable = "<!-- BEGIN GENERATED: go test ./internal/config -run TestConfigurationDoc -update -->\n"
	endTable   = "<!-- END GENERATED -->"
)

// TestConfigurationDoc keeps docs/configuration.md equal to the Config struct.
func TestConfigurationDoc(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, beginTable), strings.Index(doc, endTable)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated-table markers", docPath)
	}
	want := doc[:i+len(beginTable)] + Markdown() + doc[j:]
	if want == doc {
		return
	}
	if *update {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is out of date with the Config struct: run make docs", docPath)
}
