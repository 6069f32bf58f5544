package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/wavehouse/wavehouse/internal/app"
	"github.com/wavehouse/wavehouse/internal/config"
)

const mqUsage = `usage: wavehouse mq <command> [--config FILE] [flags]

commands:
  manifests   print the streams, consumers and KV buckets the nats backend needs
              (--format nack: jetstream.nats.io/v1beta2 resources; json: nats CLI configs)
  verify      check a live NATS server against that topology (exit 1 on differences)
  permissions print one NATS user per role with the least permissions it needs on that topology
              (--format conf: nats-server authorization block; json: pub/sub per role)

All read the boot config as serve does (--config, else $WH_CONFIG, else the defaults, then the
WH_* variables) and build the topology with serve's own mapping; flags override single keys.
Run 'wavehouse mq <command> -h' for its flags.
`

// runMQ runs `wavehouse mq …` (manifests, verify, permissions); args are the arguments after "mq". Exit
// codes: 0 ok, 1 failure or differences, 2 usage or invalid configuration.
func runMQ(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, mqUsage)
		return 2
	}
	switch args[0] {
	case "manifests":
		return mqManifests(args[1:], stdout, stderr)
	case "verify":
		return mqVerify(ctx, args[1:], stdout, stderr)
	case "permissions":
		return mqPermissions(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, mqUsage)
		return 0
	default:
		fmt.Fprintf(stderr, "wavehouse mq: unknown command %q\n%s", args[0], mqUsage)
		return 2
	}
}

// mqFlags are the flags shared by the mq commands: --config and one flag per topology key. A
// flag given on the command line overrides its key in the loaded config.
type mqFlags struct {
	fs     *flag.FlagSet
	path   *string
	over   config.Config
	setter map[string]func(dst *config.Config)
}

func newMQFlags(name string) *mqFlags {
	f := &mqFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError), over: config.Default(), setter: map[string]func(*config.Config){}}
	f.path = f.fs.String("config", "", "config file (default $WH_CONFIG; none: built-in defaults)")
	o := &f.over
	f.key("prefix", "mq.prefix", func(d *config.Config) { d.MQ.Prefix = o.MQ.Prefix }, func(fs *flag.FlagSet, u string) { fs.StringVar(&o.MQ.Prefix, "prefix", o.MQ.Prefix, u) })
	f.key("partitions", "mq.partitions", func(d *config.Config) { d.MQ.Partitions = o.MQ.Partitions }, func(fs *flag.FlagSet, u string) { fs.IntVar(&o.MQ.Partitions, "partitions", o.MQ.Partitions, u) })
	f.key("replicas", "mq.nats.replicas", func(d *config.Config) { d.MQ.NATS.Replicas = o.MQ.NATS.Replicas }, func(fs *flag.FlagSet, u string) { fs.IntVar(&o.MQ.NATS.Replicas, "replicas", o.MQ.NATS.Replicas, u) })
	f.key("max-bytes", "mq.nats.max_bytes, -1 unlimited", func(d *config.Config) { d.MQ.NATS.MaxBytes = o.MQ.NATS.MaxBytes }, func(fs *flag.FlagSet, u string) { fs.Int64Var(&o.MQ.NATS.MaxBytes, "max-bytes", o.MQ.NATS.MaxBytes, u) })
	f.key("dlq-max-bytes", "mq.nats.dlq_max_bytes, -1 unlimited", func(d *config.Config) { d.MQ.NATS.DLQMaxBytes = o.MQ.NATS.DLQMaxBytes }, func(fs *flag.FlagSet, u string) {
		fs.Int64Var(&o.MQ.NATS.DLQMaxBytes, "dlq-max-bytes", o.MQ.NATS.DLQMaxBytes, u)
	})
	f.key("duplicate-window", "mq.nats.duplicate_window", func(d *config.Config) { d.MQ.NATS.DuplicateWindow = o.MQ.NATS.DuplicateWindow }, func(fs *flag.FlagSet, u string) { fs.Var(&o.MQ.NATS.DuplicateWindow, "duplicate-window", u) })
	f.key("ack-wait", "mq.ack_wait", func(d *config.Config) { d.MQ.AckWait = o.MQ.AckWait }, func(fs *flag.FlagSet, u string) { fs.Var(&o.MQ.AckWait, "ack-wait", u) })
	f.key("max-ack-pending", "mq.nats.max_ack_pending", func(d *config.Config) { d.MQ.NATS.MaxAckPending = o.MQ.NATS.MaxAckPending }, func(fs *flag.FlagSet, u string) {
		fs.IntVar(&o.MQ.NATS.MaxAckPending, "max-ack-pending", o.MQ.NATS.MaxAckPending, u)
	})
	return f
}

// key registers one flag overriding the config key it names in its usage.
func (f *mqFlags) key(name, key string, set func(*config.Config), register func(*flag.FlagSet, string)) {
	register(f.fs, "overrides "+key)
	f.setter[name] = set
}

// load parses args, loads and validates the config, and applies the flags given. ok is false
// when the command must exit with code.
func (f *mqFlags) load(args []string, stderr io.Writer) (cfg config.Config, code int, ok bool) {
	f.fs.SetOutput(stderr)
	if err := f.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, 0, false
		}
		return cfg, 2, false
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "wavehouse mq %s: unexpected arguments %q\n", f.fs.Name(), f.fs.Args())
		return cfg, 2, false
	}
	cfg, err := config.Load(configPath(*f.path))
	if err == nil {
		f.fs.Visit(func(fl *flag.Flag) {
			if set := f.setter[fl.Name]; set != nil {
				set(&cfg)
			}
		})
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "wavehouse mq %s: invalid configuration:\n", f.fs.Name())
		for _, line := range splitErrors(err) {
			fmt.Fprintf(stderr, "  - %s\n", line)
		}
		return cfg, 2, false
	}
	return cfg, 0, true
}

func mqManifests(args []string, stdout, stderr io.Writer) int {
	f := newMQFlags("manifests")
	format := f.fs.String("format", "nack", "output format: nack (Kubernetes resources) or json (nats CLI configs)")
	cfg, code, ok := f.load(args, stderr)
	if !ok {
		return code
	}
	t := app.NATSQueueConfig(cfg.MQ).Topology()
	if err := t.Validate(); err != nil {
		fmt.Fprintf(stderr, "wavehouse mq manifests: %v\n", err)
		return 2
	}
	var (
		out []byte
		err error
	)
	switch *format {
	case "nack":
		out, err = t.RenderNack()
	case "json":
		out, err = t.RenderJSON()
	default:
		fmt.Fprintf(stderr, "wavehouse mq manifests: --format %q: use nack or json\n", *format)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "wavehouse mq manifests: %v\n", err)
		return 1
	}
	_, _ = stdout.Write(out)
	return 0
}

// splitURLs reads --url: comma-separated server URLs.
func splitURLs(s string) []string { return strings.Split(s, ",") }
