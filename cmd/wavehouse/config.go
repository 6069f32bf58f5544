package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/wavehouse/wavehouse/internal/app"
)

const configUsage = `usage: wavehouse config check [--config FILE]

Validates the boot config and the settings directory (tenants, API keys, limits, pipes) as a
booting process would, prints the effective config as YAML with secrets redacted, a summary of the
settings (never a key or password), and every warning. Exit 0 valid, 1 invalid, 2 usage.
`

func runConfig(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprint(stderr, configUsage)
		return 2
	}
	fs := flag.NewFlagSet("config check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "config file (default $WH_CONFIG; none: built-in defaults)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "config check: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg, err := loadValid(configPath(*path), stderr)
	if err != nil {
		return 1
	}
	snap, err := app.LoadSettings(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "settings_dir %s: %v\n", cfg.SettingsDir, err)
		return 1
	}
	_, accessWarning, err := app.CheckAccess(cfg, snap)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	out, err := cfg.YAML()
	if err != nil {
		fmt.Fprintf(stderr, "config check: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "# effective configuration (secrets redacted)\n%s", out)
	fmt.Fprintf(stdout, "# settings: %d tenants, %d API keys, %d shared pipes\n", len(snap.TenantNames()), snap.KeyCount(), len(snap.SharedPipes()))
	warnings := cfg.Warnings()
	if accessWarning != "" {
		warnings = append(warnings, accessWarning)
	}
	if len(warnings) == 0 {
		fmt.Fprintln(stdout, "# no warnings")
	}
	for _, w := range warnings {
		fmt.Fprintf(stdout, "# warning: %s\n", w)
	}
	fmt.Fprintln(stderr, "configuration is valid")
	return 0
}
