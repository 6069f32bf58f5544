// Command wavehouse is the WaveHouse gateway: `wavehouse serve` runs the roles in the config,
// the other subcommands check config and operate the deployment. One file per subcommand.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: wavehouse <command> [flags]

commands:
  serve          run the roles in the config (api, ingest, sweeper)
  config check   validate the config and print the effective config and warnings
  version        print the build version
  health         probe /readyz on a process's ops listener (exit 0 ready, 1 not)
  mq manifests   print the JetStream topology the external queue needs (nack or nats CLI JSON)
  mq verify      check a live NATS server against that topology
  mq permissions print least-privilege NATS users per role (nats-server config or JSON)
  keys create    create an API key for a tenant (printed once; only its hash goes in settings)
  bench ingest   load-test a gateway (and ClickHouse directly, side by side)
  bench capacity simulate a deployment's ingest path against per-resource capacities (no servers)
  help           show this help

Run 'wavehouse <command> -h' for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal now ends the process at once
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches a subcommand and returns the process exit code: 0 success, 1 failure, 2 usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stdout, stderr)
	case "config":
		return runConfig(ctx, args[1:], stdout, stderr)
	case "version":
		return runVersion(ctx, args[1:], stdout, stderr)
	case "health":
		return runHealth(ctx, args[1:], stdout, stderr)
	case "mq":
		return runMQ(ctx, args[1:], stdout, stderr)
	case "bench":
		return runBench(ctx, args[1:], stdout, stderr)
	case "keys":
		return runKeys(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "wavehouse: unknown command %q\n\n%s", args[0], usage)
	return 2
}
