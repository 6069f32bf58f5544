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

// Defaults of the embedded queue's own settings; the boot config's defaults for
// mq.embedded.sync_interval and mq.embedded.tenant_max_bytes are these constants.
const (
	DefaultSyncInterval   = 100 * time.Millisecond
	DefaultTenantMaxBytes = 256 << 20
	// DefaultMaxRecordBytes is the embedded server's max_payload.
	DefaultMaxRecordBytes = 24 << 20
)

// Config configures the embedded queue. internal/app fills it from the boot config's mq and
// mq.embedded blocks; fields without a key keep the defaults of package jsmq.
type Config struct {
	// Dir is the JetStream store directory (mq.embedded.dir; required).
	Dir string
	// Sync is SyncAlways (default), SyncInterval or SyncNone (mq.embedded.sync).
	Sync string
	// SyncInterval is the fsync period under SyncInterval (mq.embedded.sync_interval).
	// Default DefaultSyncInterval.
	SyncInterval time.Duration
	// Prefix starts every subject and stream name (mq.prefix). Default jsmq.DefaultPrefix.
	Prefix string
	// Partitions is the number of partition streams (mq.partitions). Default
	// jsmq.DefaultPartitions.
	Partitions int
	// MaxBytes bounds each partition stream; beyond it publishes fail with mq: queue full
	// (mq.embedded.max_bytes, where 0 means -1 here). Default jsmq.DefaultMaxBytes; -1
	// unlimited.
	MaxBytes int64
	// TenantMaxBytes bounds one tenant's published but not yet acknowledged bytes; beyond it
	// publishes fail with mq: queue full (mq.embedded.tenant_max_bytes, where 0 means -1
	// here). Default DefaultTenantMaxBytes; -1 unlimited.
	TenantMaxBytes int64
	// TenantBudget, when set, returns a tenant's own budget replacing TenantMaxBytes (0: use
	// TenantMaxBytes, negative: unlimited); it is called on every publish and must be cheap.
	TenantBudget func(tenant string) int64
	// DLQMaxBytes bounds the dead-letter stream. Default jsmq.DefaultDLQMaxBytes; -1
	// unlimited.
	DLQMaxBytes int64
	// DuplicateWindow is how long an idempotency key suppresses repeats. Default
	// jsmq.DefaultDuplicateWindow.
	DuplicateWindow time.Duration
	// AckWait is how long a delivery may stay unacknowledged before it is redelivered
	// (mq.ack_wait). Default jsmq.DefaultAckWait.
	AckWait time.Duration
	// MaxAckPending bounds unacknowledged deliveries per partition. Default
	// jsmq.DefaultMaxAckPending.
	MaxAckPending int
	// MaxFrameRecords bounds the records coalesced into one frame. Default
	// jsmq.DefaultMaxFrameRecords.
	MaxFrameRecords int
	// MaxFrameBytes bounds a coalesced frame. Default jsmq.DefaultMaxFrameBytes.
	MaxFrameBytes int
	// MaxRecordBytes is the largest single record (the server's max_payload). Default
	// DefaultMaxRecordBytes.
	MaxRecordBytes int
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
		c.SyncInterval = DefaultSyncInterval
	}
	t := c.topology().WithDefaults()
	c.Prefix, c.Partitions, c.MaxBytes, c.DLQMaxBytes = t.Prefix, t.Partitions, t.MaxBytes, t.DLQMaxBytes
	c.DuplicateWindow, c.AckWait, c.MaxAckPending = t.DuplicateWindow, t.AckWait, t.MaxAckPending
	if c.TenantMaxBytes == 0 {
		c.TenantMaxBytes = DefaultTenantMaxBytes
	}
	if c.MaxFrameRecords == 0 {
		c.MaxFrameRecords = jsmq.DefaultMaxFrameRecords
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = jsmq.DefaultMaxFrameBytes
	}
	if c.MaxRecordBytes == 0 {
		c.MaxRecordBytes = DefaultMaxRecordBytes
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
	// The fields below have no config key: only code sets them, so the messages name the field.
	if c.MaxFrameRecords < 1 {
		errs = append(errs, errors.New("embeddedmq: MaxFrameRecords must be at least 1"))
	}
	if c.MaxFrameBytes < 1024 {
		errs = append(errs, errors.New("embeddedmq: MaxFrameBytes must be at least 1024"))
	}
	if c.MaxRecordBytes < 64<<10 || c.MaxRecordBytes > 64<<20 {
		errs = append(errs, errors.New("embeddedmq: MaxRecordBytes must be between 64 KiB and 64 MiB"))
	}
	if err := c.topology().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("mq: %w", err))
	}
	return errors.Join(errs...)
}
