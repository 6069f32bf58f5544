// Package natsmq is the external queue backend: nats.go against an
// operator-run NATS JetStream cluster, through the same JetStream code
// (jsmq) as the embedded backend. The operator owns the topology; WaveHouse
// verifies it at boot unless manage_topology is set.
package natsmq

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
)

// Queue is the external mq.Queue. Calls before Start fail with
// mq.ErrUnavailable; calls after Close fail with mq.ErrClosed. Start connects, then creates the
// topology (manage_topology) or verifies it and refuses with every difference; the connection
// reconnects by itself; Close ends subscriptions and closes the connection.
type Queue struct {
	*jsmq.Lifecycle
	cfg  Config
	deps Deps
}

var _ mq.Queue = (*Queue)(nil)

// New validates cfg and returns an unstarted queue; it starts nothing.
func New(cfg Config, deps Deps) (*Queue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q := &Queue{cfg: cfg.withDefaults(), deps: deps}
	q.Lifecycle = jsmq.NewLifecycle(deps.Registerer, q.open)
	return q, nil
}

// ConnectOptions returns the nats.go options for c's authentication and
// TLS settings (shared with the mq verify command).
func ConnectOptions(c Config) ([]nats.Option, error) {
	c = c.withDefaults()
	opts := []nats.Option{
		nats.Name("wavehouse"),
		nats.Timeout(c.ConnectTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(c.ReconnectWait),
		// Publishes while disconnected fail fast instead of being
		// buffered: the api answers 503 and the client retries.
		nats.ReconnectBufSize(-1),
		nats.RetryOnFailedConnect(false),
	}
	switch {
	case c.CredsFile != "":
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	case c.NKeySeedFile != "":
		o, err := nats.NkeyOptionFromSeed(c.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("mq.nats.nkey_seed_file: %w", err)
		}
		opts = append(opts, o)
	case c.User != "":
		pw, err := os.ReadFile(c.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("mq.nats.password_file: %w", err)
		}
		opts = append(opts, nats.UserInfo(c.User, strings.TrimRight(string(pw), "\r\n")))
	}
	if c.TLS.on() {
		// InsecureSkipVerify is opt-in and documented as testing only. RootCAs and ClientCert
		// below add to this tls.Config.
		opts = append(opts, nats.Secure(&tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.TLS.InsecureSkipVerify}))
	}
	if c.TLS.CAFile != "" {
		opts = append(opts, nats.RootCAs(c.TLS.CAFile))
	}
	if c.TLS.CertFile != "" {
		opts = append(opts, nats.ClientCert(c.TLS.CertFile, c.TLS.KeyFile))
	}
	return opts, nil
}

// open connects and reconciles or verifies the topology (jsmq.OpenFunc).
func (q *Queue) open(ctx context.Context, metrics *jsmq.Metrics) (*jsmq.Queue, func(), error) {
	c := q.cfg
	opts, err := ConnectOptions(c)
	if err != nil {
		return nil, nil, err
	}
	if log := q.deps.Log; log != nil {
		// Asynchronous errors (a permissions violation above all: a call the NATS user of this
		// role is not granted, see `wavehouse mq permissions`) go to the log, not to stderr.
		opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("mq: nats error", "error", err, "subscription", subject)
		}))
	}
	nc, err := nats.Connect(strings.Join(c.URLs, ","), opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: connect to %s: %w", mq.ErrUnavailable, strings.Join(c.URLs, ","), err)
	}
	jq, err := jsmq.New(nc, jsmq.Options{
		Metrics:         metrics,
		Log:             q.deps.Log,
		Topology:        c.Topology(),
		MaxFrameRecords: c.MaxFrameRecords,
		MaxFrameBytes:   c.MaxFrameBytes,
		PublishTimeout:  c.PublishTimeout,
	})
	if err == nil {
		err = q.prepare(ctx, jq)
	}
	return jq, nc.Close, err
}

// BootWait bounds how long Start waits for JetStream to answer once connected: a cluster still
// electing its meta leader (a fresh R3 cluster, or one whose servers restart together) answers
// "no responders" or "temporarily unavailable" for a few seconds, and one whose meta leader has not
// heard from every server yet refuses a replicated stream or bucket with "no suitable peers for
// placement, peer offline". Any other error fails at once.
const BootWait = time.Minute

// prepare reconciles or verifies the topology and reads the layout record, retrying (every
// ReconnectWait, for at most BootWait) while JetStream is unavailable.
func (q *Queue) prepare(ctx context.Context, jq *jsmq.Queue) error {
	deadline := time.Now().Add(BootWait)
	for attempt := 1; ; attempt++ {
		err := q.prepareOnce(ctx, jq)
		if err == nil || !jsmq.Unavailable(err) || time.Now().After(deadline) {
			return err
		}
		if log := q.deps.Log; log != nil {
			log.Warn("mq: JetStream is not answering yet; retrying", "attempt", attempt, "error", err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(q.cfg.ReconnectWait):
		}
	}
}

func (q *Queue) prepareOnce(ctx context.Context, jq *jsmq.Queue) error {
	c := q.cfg
	if c.ManageTopology {
		if err := c.Topology().Ensure(ctx, jq.JetStream()); err != nil {
			return err
		}
	} else {
		diffs, err := c.Topology().Verify(ctx, jq.JetStream())
		if err != nil {
			return err
		}
		if len(diffs) > 0 {
			return fmt.Errorf("mq.nats: the JetStream topology differs from what prefix %q, %d partitions, %d replicas need "+
				"(apply `wavehouse mq manifests`, or set mq.nats.manage_topology: true for development): %w",
				c.Prefix, c.Partitions, c.Replicas, jsmq.TopologyError(diffs))
		}
	}
	return jq.ReconcileLayout(ctx)
}
