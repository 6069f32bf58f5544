package embeddedmq

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
)

// Sync modes of the embedded JetStream file store.
const (
	// SyncAlways fsyncs every stored frame before the publish returns (the
	// default; no acknowledged record is lost on a crash or power loss).
	SyncAlways = "always"
	// SyncInterval acknowledges once the frame is written to the page
	// cache and fsyncs every SyncInterval: a power loss or kernel crash can
	// lose up to SyncInterval of acknowledged records (a process crash
	// loses nothing).
	SyncInterval = "interval"
	// SyncNone acknowledges once the frame is written to the page cache
	// and asks for no fsync of its own: the kernel writes the pages back
	// when it chooses, and the JetStream file store's background fsync
	// (NoneFlushInterval; it cannot be switched off) bounds what a power
	// loss or kernel crash can lose. A process crash loses nothing.
	SyncNone = "none"
)

// NoneFlushInterval is the store's background fsync period under SyncNone:
// the nats-server default, set explicitly so that the documented loss
// window does not move with a server upgrade.
const NoneFlushInterval = 2 * time.Minute

// Config configures the embedded queue (mq.embedded in config.yaml).
type Config struct {
	// Dir is the JetStream store directory (required; the lead passes a
	// directory under data_dir).
	Dir string `yaml:"dir"`
	// Sync is "always" (default), "interval" or "none".
	Sync string `yaml:"sync"`
	// SyncInterval is the fsync period under sync: interval. Default 1s.
	SyncInterval time.Duration `yaml:"sync_interval"`
	// Prefix starts every subject and stream name. Default "wh".
	Prefix string `yaml:"prefix"`
	// Partitions is the number of partition streams. Default 4.
	Partitions int `yaml:"partitions"`
	// MaxBytes bounds each partition stream; beyond it publishes fail with
	// mq: queue full. Default 1 GiB; -1 unlimited.
	MaxBytes int64 `yaml:"max_bytes"`
	// TenantMaxBytes bounds one tenant's published but not yet
	// acknowledged bytes; beyond it publishes fail with mq: queue full.
	// Default 256 MiB; -1 unlimited.
	TenantMaxBytes int64 `yaml:"tenant_max_bytes"`
	// TenantBudget, when set, returns a tenant's own budget replacing TenantMaxBytes (0: use
	// TenantMaxBytes, negative: unlimited); it is called on every publish and must be cheap.
	TenantBudget func(tenant string) int64 `yaml:"-"`
	// DLQMaxBytes bounds the dead-letter stream. Default 1 GiB; -1 unlimited.
	DLQMaxBytes int64 `yaml:"dlq_max_bytes"`
	// DuplicateWindow is how long an idempotency key suppresses repeats.
	// Default 2m.
	DuplicateWindow time.Duration `yaml:"duplicate_window"`
	// AckWait is how long a delivery may stay unacknowledged before it is
	// redelivered. Default 30s.
	AckWait time.Duration `yaml:"ack_wait"`
	// MaxAckPending bounds unacknowledged deliveries per partition.
	// Default 10000.
	MaxAckPending int `yaml:"max_ack_pending"`
	// MaxFrameRecords bounds the records coalesced into one frame.
	// Default 1024.
	MaxFrameRecords int `yaml:"max_frame_records"`
	// MaxFrameBytes bounds a coalesced frame. Default 768 KiB.
	MaxFrameBytes int `yaml:"max_frame_bytes"`
	// MaxRecordBytes is the largest single record (the server's
	// max_payload). Default 24 MiB.
	MaxRecordBytes int `yaml:"max_record_bytes"`
}

// Deps are the embedded queue's collaborators.
type Deps struct {
	// Registerer, when not nil, receives the queue's metrics at Start.
	Registerer prometheus.Registerer
	// Log receives what the queue handles on its own (an undecodable
	// message dead-lettered); nil discards.
	Log *slog.Logger
	// AfterReplayPublish is a fault hook for tests (jsmq.Options.AfterReplayPublish): it runs in
	// DLQ Replay between an entry's republish and its delete.
	AfterReplayPublish func(entryID uint64) error
}

// withDefaults returns c with zero values replaced by defaults.
func (c Config) withDefaults() Config {
	if c.Sync == "" {
		c.Sync = SyncAlways
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = time.Second
	}
	if c.Prefix == "" {
		c.Prefix = "wh"
	}
	if c.Partitions == 0 {
		c.Partitions = 4
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = 1 << 30
	}
	if c.TenantMaxBytes == 0 {
		c.TenantMaxBytes = 256 << 20
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
	if c.MaxRecordBytes == 0 {
		c.MaxRecordBytes = 24 << 20
	}
	return c
}

func (c Config) topology() jsmq.Topology {
	return jsmq.Topology{
		Prefix: c.Prefix, Partitions: c.Partitions, Replicas: 1,
		MaxBytes: c.MaxBytes, DLQMaxBytes: c.DLQMaxBytes,
		DuplicateWindow: c.DuplicateWindow, AckWait: c.AckWait, MaxAckPending: c.MaxAckPending,
	}
}

// Validate reports every problem of c (after defaults), naming the key.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("mq.embedded.dir: required (a directory for the JetStream store)"))
	}
	switch c.Sync {
	case SyncAlways, SyncInterval, SyncNone:
	default:
		errs = append(errs, fmt.Errorf("mq.embedded.sync: %q is not one of always, interval, none", c.Sync))
	}
	if c.SyncInterval < 0 {
		errs = append(errs, errors.New("mq.embedded.sync_interval: must be positive"))
	}
	if c.MaxFrameRecords < 1 {
		errs = append(errs, errors.New("mq.embedded.max_frame_records: must be at least 1"))
	}
	if c.MaxFrameBytes < 1024 {
		errs = append(errs, errors.New("mq.embedded.max_frame_bytes: must be at least 1024"))
	}
	if c.MaxRecordBytes < 64<<10 || c.MaxRecordBytes > 64<<20 {
		errs = append(errs, errors.New("mq.embedded.max_record_bytes: must be between 64 KiB and 64 MiB"))
	}
	if err := c.topology().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("mq.embedded: %w", err))
	}
	return errors.Join(errs...)
}
