package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/settings"
)

const keysUsage = `usage: wavehouse keys create --tenant T --scopes ingest,query[,stream][,admin] [--tables a,b] [--expires 90d]

Creates an API key. The key is printed once and is not stored anywhere: only its SHA-256 hash goes
into the settings directory, in the entry printed after it.
`

// runKeys implements `wavehouse keys`.
func runKeys(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprint(stderr, keysUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return 0
		}
		return 2
	}
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, keysUsage); fs.PrintDefaults() }
	tenant := fs.String("tenant", "", "tenant the key belongs to (its settings file is tenants/<tenant>.yaml)")
	scopes := fs.String("scopes", "", "comma-separated scopes: ingest, query, stream, admin")
	tables := fs.String("tables", "", "comma-separated tables the key is restricted to (default: all)")
	expires := fs.String("expires", "", "expiry: a duration (90d, 720h), an RFC 3339 time or a date (default: never)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "wavehouse keys create: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var errs []error
	if !settings.ValidTenantName(*tenant) {
		errs = append(errs, fmt.Errorf("--tenant %q: want [a-z][a-z0-9_]{0,62}", *tenant))
	}
	sc, err := auth.ParseScopes(*scopes)
	if err != nil {
		errs = append(errs, fmt.Errorf("--scopes: %w", err))
	}
	tb, err := auth.ParseTables(*tables)
	if err != nil {
		errs = append(errs, fmt.Errorf("--tables: %w", err))
	}
	exp, err := auth.ParseExpiry(*expires, time.Now())
	if err != nil {
		errs = append(errs, fmt.Errorf("--expires: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(stderr, "wavehouse keys create: %v\n", err)
		return 2
	}
	key, err := auth.GenerateKey(nil)
	if err != nil {
		fmt.Fprintf(stderr, "wavehouse keys create: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "API key for tenant %s (shown only now; store it in a secret manager):\n\n  %s\n\n", *tenant, key.Token)
	fmt.Fprintf(stdout, "Add this entry under keys: in settings_dir/tenants/%s.yaml (it holds only the hash):\n\n  %s\n\n", *tenant, auth.KeyYAML(key, sc, tb, exp))
	fmt.Fprintf(stdout, "Clients send it as: Authorization: Bearer <key>. The settings directory reloads on change.\n")
	return 0
}
