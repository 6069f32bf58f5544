package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/wavehouse/wavehouse/internal/bench"
)

const benchUsage = `usage: wavehouse bench ingest [flags]
       wavehouse bench capacity [flags]

bench capacity simulates a deployment's ingest path (no servers) and checks every resource
against a capacity; see wavehouse bench capacity --help and docs/scaling.md.

bench ingest:

Sends pre-generated batches of a standard 7-column table to a gateway (through /v1/ingest, its
ClickHouse HTTP interface or both: --interface, alternating --rounds times; and, with --direct, the
same batches straight to ClickHouse), then waits until the accepted rows are queryable.
Loopback addresses only. The exit status is 1 when the run fails its own checks: a phase with
no 2xx answer, more failed requests (refused connection, timeout, non-2xx) than
--max-error-ratio allows, or accepted rows that did not become queryable within --settle.
`

// directFlags collects repeated --direct KIND=HOST:PORT values.
type directFlags []bench.Direct

func (d *directFlags) String() string {
	parts := make([]string, len(*d))
	for i, x := range *d {
		parts[i] = x.Kind + "=" + x.Addr
	}
	return strings.Join(parts, ",")
}

func (d *directFlags) Set(s string) error {
	x, err := bench.ParseDirect(s)
	if err != nil {
		return err
	}
	*d = append(*d, x)
	return nil
}

// runBench runs `wavehouse bench …`; args are everything after "bench".
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, benchUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "capacity" {
		return runBenchCapacity(args[1:], stdout, stderr)
	}
	if args[0] != "ingest" {
		fmt.Fprintf(stderr, "wavehouse bench: unknown benchmark %q\n\n%s", args[0], benchUsage)
		return 2
	}
	fs := flag.NewFlagSet("bench ingest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, benchUsage, "\nflags:\n")
		fs.PrintDefaults()
	}
	var cfg bench.Config
	var direct directFlags
	fs.StringVar(&cfg.URL, "url", "http://127.0.0.1:8080", "gateway base URL; empty runs only --direct targets")
	fs.StringVar(&cfg.Table, "table", "bench_events", "table name (direct targets use <table>_direct_http / <table>_direct_native)")
	fs.StringVar(&cfg.Database, "database", "default", "ClickHouse database of the gateway tenant and of the direct tables")
	fs.BoolVar(&cfg.Create, "create", false, "create the standard table(s) if missing (the gateway's as the operator, see --operator-key-file)")
	keyFile := fs.String("operator-key-file", "data/operator.key", "file holding the gateway's operator key, read for --create (the default is the key make run generates)")
	fs.IntVar(&cfg.Clients, "clients", 8, "concurrent clients")
	fs.IntVar(&cfg.Rows, "rows", 1, "rows per request")
	fs.DurationVar(&cfg.Duration, "duration", 0, "length of each load phase (default 10s)")
	fs.IntVar(&cfg.Requests, "requests", 0, "stop each phase after this many requests (0: only --duration bounds it)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "limit all clients together to this many rows/s (0: as fast as possible)")
	fs.StringVar(&cfg.Format, "format", bench.FormatNDJSON, "gateway body format: json (array) or ndjson")
	fs.BoolVar(&cfg.Gzip, "gzip", false, "gzip every body (compressed before the run)")
	fs.BoolVar(&cfg.WaitCommitted, "wait-committed", false, "send ?wait=committed")
	fs.BoolVar(&cfg.IdempotencyKeys, "idempotency-keys", false, "after the gateway phase, run it again with a new Idempotency-Key per request (phase \"gateway keyed\")")
	ifaces := fs.String("interface", bench.InterfaceIngest, "gateway interfaces to load with the same rows, one phase each, in order: ingest (POST /v1/ingest/{table}), clickhouse (POST /?query=INSERT INTO table FORMAT JSONEachRow), or both: ingest,clickhouse")
	fs.IntVar(&cfg.Rounds, "rounds", 1, "run the gateway phases this many times, alternating: odd rounds in --interface order, even rounds reversed (ABBA)")
	fs.StringVar(&cfg.ClickHouseHTTP, "clickhouse-http", "", "ClickHouse HTTP host:port to count rows and parts directly (default: count through POST /v1/query)")
	fs.Var(&direct, "direct", "also send the same batches straight to ClickHouse: clickhouse-http=HOST:PORT or native=HOST:PORT (repeatable)")
	fs.DurationVar(&cfg.Settle, "settle", 0, "how long to wait for accepted rows to become queryable (default 60s)")
	fs.IntVar(&cfg.Bodies, "bodies", 64, "distinct pre-generated bodies to cycle through")
	fs.Float64Var(&cfg.MaxErrorRatio, "max-error-ratio", 0, "share of failed requests (transport error or non-2xx) a phase may have and pass; above it the run fails (exit 1)")
	fs.StringVar(&cfg.OpsURL, "ops-url", "http://127.0.0.1:9090", "the gateway's ops listener, read for its RSS at the end; empty skips it")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args[1:]); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "wavehouse bench ingest: unexpected arguments %q\n", fs.Args())
		return 2
	}
	cfg.Direct = direct
	var err error
	if cfg.Interfaces, err = bench.ParseInterfaces(*ifaces); err != nil {
		fmt.Fprintf(stderr, "wavehouse bench ingest: --interface: %v\n", err)
		return 2
	}
	if cfg.Create && cfg.URL != "" {
		b, err := os.ReadFile(*keyFile)
		if err != nil {
			fmt.Fprintf(stderr, "wavehouse bench ingest: --create needs the operator key: %v (set --operator-key-file)\n", err)
			return 2
		}
		cfg.OperatorKey = strings.TrimSpace(string(b))
	}
	if !*quiet {
		cfg.Progress = stderr
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "wavehouse bench ingest: %v\n", err)
		return 2
	}
	rep, err := bench.Run(ctx, cfg)
	if rep != nil {
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			_ = enc.Encode(rep)
		} else {
			_ = rep.WriteText(stdout)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "wavehouse bench ingest: %v\n", err)
		return 1
	}
	if len(rep.Failed) > 0 {
		fmt.Fprintf(stderr, "wavehouse bench ingest: FAILED: %s\n", strings.Join(rep.Failed, "; "))
		return 1
	}
	return 0
}
