package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
)

// QueueCheck is what VerifyQueue found on a live NATS server.
type QueueCheck struct {
	// Diffs lists every difference from the topology, the list boot refuses with.
	Diffs []string
	// Extra lists the partition streams beyond the configured count; ExtraErr says why they
	// could not be listed.
	Extra    []jsmq.ExtraStream
	ExtraErr error
	// Consumer is the name of the durable ingest consumer of every partition stream.
	Consumer string
}

// VerifyQueue connects to c.URLs with c's credentials and TLS, as the nats backend does at boot,
// and compares the live JetStream topology with the one c implies (`wavehouse mq verify`).
func VerifyQueue(ctx context.Context, c natsmq.Config) (QueueCheck, error) {
	opts, err := natsmq.ConnectOptions(c)
	if err != nil {
		return QueueCheck{}, err
	}
	url := strings.Join(c.URLs, ",")
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return QueueCheck{}, fmt.Errorf("connect to %s: %w", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return QueueCheck{}, err
	}
	t := c.Topology()
	diffs, err := t.Verify(ctx, js)
	if err != nil {
		return QueueCheck{}, err
	}
	extra, extraErr := t.Extra(ctx, js)
	return QueueCheck{Diffs: diffs, Extra: extra, ExtraErr: extraErr, Consumer: jsmq.ConsumerName}, nil
}
