package config

import (
	"fmt"
	"strings"
)

var descEscaper = strings.NewReplacer("|", "\\|", "<", "\\<")

// Markdown renders the reference table of every key; docs/configuration.md embeds it and a test
// keeps the two equal, so the page cannot drift from the struct.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| key | env | type | default | description |\n|---|---|---|---|---|\n")
	for _, f := range Fields() {
		def := f.Default
		if def == "" {
			def = "—"
		} else {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s |\n", f.Key, f.Env, f.Type, def, descEscaper.Replace(f.Description))
	}
	return b.String()
}
