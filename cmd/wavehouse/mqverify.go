package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/wavehouse/wavehouse/internal/app"
	"github.com/wavehouse/wavehouse/internal/config"
)

func mqVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newMQFlags("verify")
	o := &f.over.MQ.NATS
	str := func(name, key string, dst func(*config.NATS) *string) {
		f.fs.StringVar(dst(o), name, "", "overrides "+key)
		f.setter[name] = func(c *config.Config) { *dst(&c.MQ.NATS) = *dst(o) }
	}
	var url string
	f.fs.StringVar(&url, "url", "", "NATS server URLs, comma-separated (overrides mq.nats.urls)")
	f.setter["url"] = func(c *config.Config) { c.MQ.NATS.URLs = splitURLs(url) }
	str("creds", "mq.nats.creds_file", func(n *config.NATS) *string { return &n.CredsFile })
	str("nkey", "mq.nats.nkey_seed_file", func(n *config.NATS) *string { return &n.NKeySeedFile })
	str("user", "mq.nats.user", func(n *config.NATS) *string { return &n.User })
	str("password-file", "mq.nats.password_file", func(n *config.NATS) *string { return &n.PasswordFile })
	str("tls-ca", "mq.nats.tls.ca_file", func(n *config.NATS) *string { return &n.TLS.CAFile })
	str("tls-cert", "mq.nats.tls.cert_file", func(n *config.NATS) *string { return &n.TLS.CertFile })
	str("tls-key", "mq.nats.tls.key_file", func(n *config.NATS) *string { return &n.TLS.KeyFile })
	timeout := f.fs.Duration("timeout", 10*time.Second, "time allowed for the whole check")
	cfg, code, ok := f.load(args, stderr)
	if !ok {
		return code
	}
	if len(cfg.MQ.NATS.URLs) == 0 {
		fmt.Fprintln(stderr, "wavehouse mq verify: --url is required when the config sets no mq.nats.urls")
		return 2
	}
	nc := app.NATSQueueConfig(cfg.MQ)
	if err := nc.Validate(); err != nil {
		fmt.Fprintf(stderr, "wavehouse mq verify: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	check, err := app.VerifyQueue(ctx, nc)
	if err != nil {
		fmt.Fprintf(stderr, "wavehouse mq verify: %v\n", err)
		return 1
	}
	prefix, partitions := cfg.MQ.Prefix, cfg.MQ.Partitions
	stranded := reportExtra(check, partitions, stdout, stderr)
	if len(check.Diffs) > 0 {
		fmt.Fprintf(stdout, "%d difference(s) from the topology for prefix %q:\n", len(check.Diffs), prefix)
		for _, d := range check.Diffs {
			fmt.Fprintf(stdout, "  - %s\n", d)
		}
		return 1
	}
	if stranded > 0 {
		return 1
	}
	t := nc.Topology()
	fmt.Fprintf(stdout, "ok: %d streams, %d consumers, %d key-value buckets match (prefix %q)\n",
		len(t.Streams()), len(t.Consumers()), len(t.KeyValues()), prefix)
	return 0
}

// reportExtra prints the partition streams beyond the partition count: an ingest process drains
// the frames they still hold (they do not change the exit code, except a stream that holds frames
// but has no ingest consumer, which is a difference: nothing would insert them).
func reportExtra(check app.QueueCheck, partitions int, stdout, stderr io.Writer) (stranded int) {
	if check.ExtraErr != nil {
		fmt.Fprintf(stderr, "wavehouse mq verify: cannot look for partition streams beyond --partitions: %v\n", check.ExtraErr)
		return 0
	}
	for _, e := range check.Extra {
		switch {
		case e.Unacked > 0 && !e.HasConsumer:
			stranded++
			fmt.Fprintf(stdout, "stranded: stream %s (partition %d, beyond the %d partitions) holds %d unacknowledged frames and has no %s consumer: nothing inserts them; "+
				"add the consumer (wavehouse mq manifests --partitions %d lists it) or raise the partition count\n",
				e.Stream, e.Partition, partitions, e.Unacked, check.Consumer, e.Partition+1)
		case e.Unacked > 0:
			fmt.Fprintf(stdout, "draining: stream %s (partition %d, beyond the %d partitions) holds %d unacknowledged frames; the ingest role inserts them, then the stream can be deleted\n",
				e.Stream, e.Partition, partitions, e.Unacked)
		default:
			fmt.Fprintf(stdout, "drained: stream %s (partition %d, beyond the %d partitions) holds no unacknowledged frame (%d retained); it can be deleted\n",
				e.Stream, e.Partition, partitions, e.Frames)
		}
	}
	return stranded
}
