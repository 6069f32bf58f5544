// Package mqcli implements `wavehouse mq manifests` and `wavehouse mq
// verify`: the external JetStream topology as operator resources, and a
// check of a live server against it.
package mqcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
)

const usage = `usage: wavehouse mq <command> [flags]

commands:
  manifests   print the streams, consumers and KV buckets the nats backend needs
              (--format nack: jetstream.nats.io/v1beta2 resources; json: nats CLI configs)
  verify      check a live NATS server against that topology (exit 1 on differences)

Run 'wavehouse mq <command> -h' for its flags.
`

// Run runs an mq subcommand; args are the arguments after "mq". It returns
// the exit code: 0 ok, 1 failure or differences, 2 usage.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "manifests":
		return manifests(args[1:], stdout, stderr)
	case "verify":
		return verify(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "wavehouse mq: unknown command %q\n%s", args[0], usage)
		return 2
	}
}

// topologyFlags registers the flags that define the topology.
func topologyFlags(fs *flag.FlagSet, c *natsmq.Config) {
	fs.StringVar(&c.Prefix, "prefix", "wh", "subject and stream name prefix (mq.nats.prefix)")
	fs.IntVar(&c.Partitions, "partitions", 4, "number of partition streams (mq.nats.partitions)")
	fs.IntVar(&c.Replicas, "replicas", 3, "replicas of every stream and bucket (mq.nats.replicas)")
	fs.Int64Var(&c.MaxBytes, "max-bytes", 1<<30, "max bytes of each partition stream, -1 unlimited (mq.nats.max_bytes)")
	fs.Int64Var(&c.DLQMaxBytes, "dlq-max-bytes", 1<<30, "max bytes of the dead-letter stream, -1 unlimited (mq.nats.dlq_max_bytes)")
	fs.DurationVar(&c.DuplicateWindow, "duplicate-window", 2*time.Minute, "idempotency dedupe window (mq.nats.duplicate_window)")
	fs.DurationVar(&c.AckWait, "ack-wait", 30*time.Second, "ack wait of the ingest consumers (mq.nats.ack_wait)")
	fs.IntVar(&c.MaxAckPending, "max-ack-pending", 10000, "max unacknowledged deliveries per partition (mq.nats.max_ack_pending)")
}

func parse(fs *flag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "wavehouse mq %s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return 2, false
	}
	return 0, true
}

func manifests(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("manifests", flag.ContinueOnError)
	var c natsmq.Config
	topologyFlags(fs, &c)
	format := fs.String("format", "nack", "output format: nack (Kubernetes resources) or json (nats CLI configs)")
	if code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	t := c.Topology()
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

func verify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	var c natsmq.Config
	topologyFlags(fs, &c)
	url := fs.String("url", "", "NATS server URLs, comma-separated (required)")
	fs.StringVar(&c.CredsFile, "creds", "", "NATS credentials file")
	fs.StringVar(&c.NKeySeedFile, "nkey", "", "nkey seed file")
	fs.StringVar(&c.User, "user", "", "user name (with --password-file)")
	fs.StringVar(&c.PasswordFile, "password-file", "", "file holding the password")
	fs.StringVar(&c.TLS.CAFile, "tls-ca", "", "CA certificate file")
	fs.StringVar(&c.TLS.CertFile, "tls-cert", "", "client certificate file")
	fs.StringVar(&c.TLS.KeyFile, "tls-key", "", "client key file")
	timeout := fs.Duration("timeout", 10*time.Second, "time allowed for the whole check")
	if code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	if *url == "" {
		fmt.Fprintln(stderr, "wavehouse mq verify: --url is required")
		return 2
	}
	c.URLs = strings.Split(*url, ",")
	if err := c.Validate(); err != nil {
		fmt.Fprintf(stderr, "wavehouse mq verify: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	opts, err := natsmq.ConnectOptions(c)
	if err != nil {
		fmt.Fprintf(stderr, "wavehouse mq verify: %v\n", err)
		return 1
	}
	nc, err := nats.Connect(*url, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "wavehouse mq verify: connect to %s: %v\n", *url, err)
		return 1
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintf(stderr, "wavehouse mq verify: %v\n", err)
		return 1
	}
	diffs, err := c.Topology().Verify(ctx, js)
	if err != nil {
		fmt.Fprintf(stderr, "wavehouse mq verify: %v\n", err)
		return 1
	}
	stranded := reportExtra(ctx, c, js, stdout, stderr)
	if len(diffs) > 0 {
		fmt.Fprintf(stdout, "%d difference(s) from the topology for prefix %q:\n", len(diffs), c.Prefix)
		for _, d := range diffs {
			fmt.Fprintf(stdout, "  - %s\n", d)
		}
		return 1
	}
	if stranded > 0 {
		return 1
	}
	t := c.Topology()
	fmt.Fprintf(stdout, "ok: %d streams, %d consumers, %d key-value buckets match (prefix %q)\n",
		len(t.Streams()), len(t.Consumers()), len(t.KeyValues()), c.Prefix)
	return 0
}

// reportExtra prints the partition streams beyond --partitions: an ingest process drains the
// frames they still hold (they do not change the exit code, except a stream that holds frames
// but has no ingest consumer, which is a difference: nothing would insert them).
func reportExtra(ctx context.Context, c natsmq.Config, js jetstream.JetStream, stdout, stderr io.Writer) (stranded int) {
	extra, err := c.Topology().Extra(ctx, js)
	if err != nil {
		fmt.Fprintf(stderr, "wavehouse mq verify: cannot look for partition streams beyond --partitions: %v\n", err)
		return 0
	}
	for _, e := range extra {
		switch {
		case e.Unacked > 0 && !e.HasConsumer:
			stranded++
			fmt.Fprintf(stdout, "stranded: stream %s (partition %d, beyond the %d partitions) holds %d unacknowledged frames and has no %s consumer: nothing inserts them; "+
				"add the consumer (wavehouse mq manifests --partitions %d lists it) or raise the partition count\n",
				e.Stream, e.Partition, c.Partitions, e.Unacked, jsmq.ConsumerName, e.Partition+1)
		case e.Unacked > 0:
			fmt.Fprintf(stdout, "draining: stream %s (partition %d, beyond the %d partitions) holds %d unacknowledged frames; the ingest role inserts them, then the stream can be deleted\n",
				e.Stream, e.Partition, c.Partitions, e.Unacked)
		default:
			fmt.Fprintf(stdout, "drained: stream %s (partition %d, beyond the %d partitions) holds no unacknowledged frame (%d retained); it can be deleted\n",
				e.Stream, e.Partition, c.Partitions, e.Frames)
		}
	}
	return stranded
}
