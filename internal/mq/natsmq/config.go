package natsmq

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
)

// TLS configures TLS to the NATS servers; all values are file paths.
type TLS struct {
	// CAFile verifies the servers' certificates.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are the client certificate (mutual TLS).
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// Config configures the external queue (mq.nats in config.yaml).
type Config struct {
	// URLs of the NATS servers (required), e.g. nats://nats-1:4222.
	URLs []string `yaml:"urls"`
	// CredsFile is a NATS credentials file (JWT + nkey seed).
	CredsFile string `yaml:"creds_file"`
	// NKeySeedFile is an nkey seed file.
	NKeySeedFile string `yaml:"nkey_seed_file"`
	// User and PasswordFile authenticate with a user name and a password
	// read from a file.
	User         string `yaml:"user"`
	PasswordFile string `yaml:"password_file"`
	// TLS to the servers.
	TLS TLS `yaml:"tls"`
	// ManageTopology creates and updates streams, consumers and the lease
	// bucket (for development). Default false: the operator owns the
	// topology (wavehouse mq manifests) and boot refuses when it differs.
	ManageTopology bool `yaml:"manage_topology"`
	// Prefix starts every subject and stream name. Default "wh".
	Prefix string `yaml:"prefix"`
	// Partitions is the number of partition streams. Default 4.
	Partitions int `yaml:"partitions"`
	// Replicas of every stream and bucket. Default 3.
	Replicas int `yaml:"replicas"`
	// MaxBytes bounds each partition stream. Default 1 GiB; -1 unlimited.
	MaxBytes int64 `yaml:"max_bytes"`
	// DLQMaxBytes bounds the dead-letter stream. Default 1 GiB; -1
	// unlimited.
	DLQMaxBytes int64 `yaml:"dlq_max_bytes"`
	// DuplicateWindow is how long an idempotency key suppresses repeats.
	// Default 2m.
	DuplicateWindow time.Duration `yaml:"duplicate_window"`
	// AckWait before an unacknowledged delivery is redelivered. Default 30s.
	AckWait time.Duration `yaml:"ack_wait"`
	// MaxAckPending bounds unacknowledged deliveries per partition.
	// Default 10000.
	MaxAckPending int `yaml:"max_ack_pending"`
	// MaxFrameRecords bounds the records coalesced into one frame.
	// Default 1024.
	MaxFrameRecords int `yaml:"max_frame_records"`
	// MaxFrameBytes bounds a coalesced frame (below the server's
	// max_payload). Default 768 KiB.
	MaxFrameBytes int `yaml:"max_frame_bytes"`
	// PublishTimeout bounds one publish or API call. Default 5s.
	PublishTimeout time.Duration `yaml:"publish_timeout"`
	// ConnectTimeout bounds the first connection. Default 10s.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// ReconnectWait is the pause between reconnect attempts. Default 1s.
	ReconnectWait time.Duration `yaml:"reconnect_wait"`
}

// Deps are the external queue's collaborators.
type Deps struct {
	// Registerer, when not nil, receives the queue's metrics at Start.
	Registerer prometheus.Registerer
	// Log receives what the queue handles on its own (an undecodable
	// message dead-lettered); nil discards.
	Log *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = "wh"
	}
	if c.Partitions == 0 {
		c.Partitions = 4
	}
	if c.Replicas == 0 {
		c.Replicas = 3
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = 1 << 30
	}
	if c.DLQMaxBytes == 0 {
		c.DLQMaxBytes = 1 << 30
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = 2 * time.Minute
	}
	if c.AckWait == 0 {
		c.AckWait = 30 * time.Second
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = 10000
	}
	if c.MaxFrameRecords == 0 {
		c.MaxFrameRecords = 1024
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = 768 << 10
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = 5 * time.Second
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.ReconnectWait == 0 {
		c.ReconnectWait = time.Second
	}
	return c
}

// Topology returns the JetStream layout this config expects.
func (c Config) Topology() jsmq.Topology {
	c = c.withDefaults()
	return jsmq.Topology{
		Prefix: c.Prefix, Partitions: c.Partitions, Replicas: c.Replicas,
		MaxBytes: c.MaxBytes, DLQMaxBytes: c.DLQMaxBytes,
		DuplicateWindow: c.DuplicateWindow, AckWait: c.AckWait, MaxAckPending: c.MaxAckPending,
	}
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
	if c.MaxFrameRecords < 1 {
		errs = append(errs, errors.New("mq.nats.max_frame_records: must be at least 1"))
	}
	if c.MaxFrameBytes < 1024 {
		errs = append(errs, errors.New("mq.nats.max_frame_bytes: must be at least 1024"))
	}
	if c.PublishTimeout < 0 || c.ConnectTimeout < 0 || c.ReconnectWait < 0 {
		errs = append(errs, errors.New("mq.nats.publish_timeout, connect_timeout, reconnect_wait: must be positive"))
	}
	if err := c.Topology().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("mq.nats: %w", err))
	}
	return errors.Join(errs...)
}
