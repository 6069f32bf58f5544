package config

import (
	"flag"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/golden"
)

var update = flag.Bool("update", false, "rewrite the generated table in docs/configuration.md")

const (
	docPath    = "../../docs/configuration.md"
	beginTable = "<!-- BEGIN GENERATED: go test ./internal/config -run TestConfigurationDoc -update -->\n"
	endTable   = "<!-- END GENERATED -->"
)

// TestConfigurationDoc keeps docs/configuration.md equal to the Config struct.
func TestConfigurationDoc(t *testing.T) {
	golden.Section(t, docPath, beginTable, endTable, Markdown(), "run make docs", *update)
}
