package natsmq

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
)

// TLS configures TLS to the NATS servers (mq.nats.tls). TLS is on when Enabled is true, when any
// other field is set, or when a URL is tls://.
type TLS struct {
	// Enabled turns TLS on with the system roots.
	Enabled bool
	// CAFile verifies the servers' certificates (PEM) instead of the system roots.
	CAFile string
	// CertFile and KeyFile are the client certificate (mutual TLS); both or neither.
	CertFile string
	KeyFile  string
	// InsecureSkipVerify accepts any server certificate (testing only).
	InsecureSkipVerify bool
}

// on reports whether TLS is requested.
func (t TLS) on() bool {
	return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.InsecureSkipVerify
}

// DefaultReplicas is the replica count of every stream and bucket; the boot config's default for
// mq.nats.replicas is this constant.
const DefaultReplicas = 3

// Config configures the external queue. internal/app fills it from the boot config's mq and
// mq.nats blocks; fields without a key keep the defaults of package jsmq.
type Config struct {
	// URLs of the NATS servers (mq.nats.urls; required), e.g. nats://nats-1:4222.
	URLs []string
	// CredsFile is a NATS credentials file, JWT + nkey seed (mq.nats.creds_file).
	CredsFile string
	// NKeySeedFile is an nkey seed file (mq.nats.nkey_seed_file).
	NKeySeedFile string
	// User and PasswordFile authenticate with a user name and a password read from a file
	// (mq.nats.user, mq.nats.password_file).
	User         string
	PasswordFile string
	// TLS to the servers (mq.nats.tls).
	TLS TLS
	// ManageTopology creates and updates streams, consumers and the lease bucket, for
	// development (mq.nats.manage_topology). False: the operator owns the topology (wavehouse
	// mq manifests) and boot refuses when it differs.
	ManageTopology bool
	// Prefix starts every subject and stream name (mq.prefix). Default jsmq.DefaultPrefix.
	Prefix string
	// Partitions is the number of partition streams (mq.partitions). Default
	// jsmq.DefaultPartitions.
	Partitions int
	// Replicas of every stream and bucket (mq.nats.replicas). Default DefaultReplicas.
	Replicas int
	// MaxBytes bounds each partition stream. Default jsmq.DefaultMaxBytes; -1 unlimited.
	MaxBytes int64
	// DLQMaxBytes bounds the dead-letter stream. Default jsmq.DefaultDLQMaxBytes; -1
	// unlimited.
	DLQMaxBytes int64
	// DuplicateWindow is how long an idempotency key suppresses repeats. Default
	// jsmq.DefaultDuplicateWindow.
	DuplicateWindow time.Duration
	// AckWait before an unacknowledged delivery is redelivered (mq.ack_wait). Default
	// jsmq.DefaultAckWait.
	AckWait time.Duration
	// MaxAckPending bounds unacknowledged deliveries per partition. Default
	// jsmq.DefaultMaxAckPending.
	MaxAckPending int
	// MaxFrameRecords bounds the records coalesced into one frame. Default
	// jsmq.DefaultMaxFrameRecords.
	MaxFrameRecords int
	// MaxFrameBytes bounds a coalesced frame (below the server's max_payload). Default
	// jsmq.DefaultMaxFrameBytes.
	MaxFrameBytes int
	// PublishTimeout bounds one publish or API call. Default jsmq.DefaultPublishTimeout.
	PublishTimeout time.Duration
	// ConnectTimeout bounds the first connection. Default DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// ReconnectWait is the pause between reconnect attempts. Default DefaultReconnectWait.
	ReconnectWait time.Duration
}

// Connection defaults; they have no config key.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultReconnectWait  = time.Second
)

// Deps are the external queue's collaborators.
type Deps struct {
	// Registerer, when not nil, receives the queue's metrics at Start.
	Registerer prometheus.Registerer
	// Log receives what the queue handles on its own (an undecodable
	// message dead-lettered); nil discards.
	Log *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Replicas == 0 {
		c.Replicas = DefaultReplicas
	}
	t := c.topology().WithDefaults()
	c.Prefix, c.Partitions, c.MaxBytes, c.DLQMaxBytes = t.Prefix, t.Partitions, t.MaxBytes, t.DLQMaxBytes
	c.DuplicateWindow, c.AckWait, c.MaxAckPending = t.DuplicateWindow, t.AckWait, t.MaxAckPending
	if c.MaxFrameRecords == 0 {
		c.MaxFrameRecords = jsmq.DefaultMaxFrameRecords
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = jsmq.DefaultMaxFrameBytes
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = jsmq.DefaultPublishTimeout
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.ReconnectWait == 0 {
		c.ReconnectWait = DefaultReconnectWait
	}
	return c
}

func (c Config) topology() jsmq.Topology {
	return jsmq.Topology{
		Prefix: c.Prefix, Partitions: c.Partitions, Replicas: c.Replicas,
		MaxBytes: c.MaxBytes, DLQMaxBytes: c.DLQMaxBytes,
		DuplicateWindow: c.DuplicateWindow, AckWait: c.AckWait, MaxAckPending: c.MaxAckPending,
	}
}

// Topology returns the JetStream layout this config expects.
func (c Config) Topology() jsmq.Topology {
	return c.withDefaults().topology()
}

// Validate reports every problem of c (after defaults), naming the key.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if len(c.URLs) == 0 {
		errs = append(errs, errors.New("mq.nats.urls: at least one server URL is required"))
	}
	auth := 0
	for _, set := range []bool{c.CredsFile != "", c.NKeySeedFile != "", c.User != ""} {
		if set {
			auth++
		}
	}
	if auth > 1 {
		errs = append(errs, errors.New("mq.nats: set only one of creds_file, nkey_seed_file, user"))
	}
	if (c.User == "") != (c.PasswordFile == "") {
		errs = append(errs, errors.New("mq.nats.user and mq.nats.password_file: set both or neither"))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		errs = append(errs, errors.New("mq.nats.tls.cert_file and mq.nats.tls.key_file: set both or neither"))
	}
	// The fields below have no config key: only code sets them, so the messages name the field.
	if c.MaxFrameRecords < 1 {
		errs = append(errs, errors.New("natsmq: MaxFrameRecords must be at least 1"))
	}
	if c.MaxFrameBytes < 1024 {
		errs = append(errs, errors.New("natsmq: MaxFrameBytes must be at least 1024"))
	}
	if c.PublishTimeout < 0 || c.ConnectTimeout < 0 || c.ReconnectWait < 0 {
		errs = append(errs, errors.New("natsmq: PublishTimeout, ConnectTimeout and ReconnectWait must be positive"))
	}
	if err := c.Topology().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("mq: %w", err))
	}
	return errors.Join(errs...)
}
