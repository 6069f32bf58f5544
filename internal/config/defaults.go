package config

import (
	"time"

	"github.com/wavehouse/wavehouse/internal/cache/localcache"
	"github.com/wavehouse/wavehouse/internal/cache/rediscache"
	"github.com/wavehouse/wavehouse/internal/coord"
	"github.com/wavehouse/wavehouse/internal/ingest/request"
	"github.com/wavehouse/wavehouse/internal/ingest/writer"
	"github.com/wavehouse/wavehouse/internal/memlimit"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
	"github.com/wavehouse/wavehouse/internal/settings"
	"github.com/wavehouse/wavehouse/internal/store/chdbstore"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/stream"
)

// Default returns the configuration of a process started with no config file and no WH_*
// variables: all roles, every layer embedded, listeners on loopback. A default that a component
// also applies to a zero field is that component's exported constant, so the two cannot differ.
func Default() Config {
	flush := writer.DefaultConfig()
	return Config{
		Server: Server{
			Listen:            "127.0.0.1:8080",
			ReadHeaderTimeout: Duration(10 * time.Second),
			IdleTimeout:       Duration(120 * time.Second),
		},
		Ops:                  Ops{Listen: "127.0.0.1:9090", Pprof: true},
		DataDir:              "./data",
		SettingsDir:          "./settings",
		SettingsPollInterval: Duration(settings.DefaultPollInterval),
		Roles:                Roles{RoleAPI, RoleIngest, RoleSweeper},
		ShutdownTimeout:      Duration(30 * time.Second),
		Log:                  Log{Level: "info", Format: "json"},
		Memory:               Memory{CgroupPercent: memlimit.DefaultCgroupPercent},
		Limits: Limits{
			MaxConcurrentQueries: 16, MaxResultRows: 1_000_000, MaxResultBytes: 1 << 30,
			MaxExecutionTime: Duration(30 * time.Second), CacheTTL: Duration(time.Minute),
		},
		Idempotency: Idempotency{Enabled: true, Lease: Duration(30 * time.Second), Retention: Duration(24 * time.Hour)},
		Ingest: Ingest{
			MaxBodyBytes: request.DefaultMaxBodyBytes,
			MaxRows:      request.DefaultMaxRows,
			MaxErrors:    request.DefaultMaxErrors,
			WaitTimeout:  Duration(10 * time.Second),
			Flush:        IngestFlush{MaxRows: flush.MaxRows, MaxBytes: flush.MaxBytes, MaxWait: Duration(flush.MaxWait)},
		},
		Stream: Stream{
			HistoryWindow: Duration(24 * time.Hour), Heartbeat: Duration(stream.DefaultHeartbeat), Retry: Duration(stream.DefaultRetry),
			Buffer: stream.DefaultBuffer, SlowPolicy: stream.PolicyGap, MaxSubscribers: stream.DefaultMaxSubscribers, WriteTimeout: Duration(stream.DefaultWriteTimeout),
		},
		Sweeper: Sweeper{Interval: Duration(time.Minute)},
		Store: Store{
			Backend: "chdb",
			CHDB:    CHDB{MaxMemoryBytes: chdbstore.DefaultMaxMemoryBytes},
			ClickHouse: ClickHouse{
				Database:     "default",
				User:         clickhousestore.DefaultUsername,
				DialTimeout:  Duration(clickhousestore.DefaultDialTimeout),
				MaxOpenConns: clickhousestore.DefaultMaxOpenConns,
				Cluster:      ClickHouseCluster{Insert: clickhousestore.InsertDistributed},
			},
		},
		MQ: MQ{
			Backend:      "embedded",
			Prefix:       jsmq.DefaultPrefix,
			Partitions:   jsmq.DefaultPartitions,
			AckWait:      Duration(jsmq.DefaultAckWait),
			DLQRetention: Duration(7 * 24 * time.Hour),
			Embedded: MQEmbedded{
				Sync: embeddedmq.SyncAlways, SyncInterval: Duration(embeddedmq.DefaultSyncInterval),
				MaxBytes: jsmq.DefaultMaxBytes, TenantMaxBytes: embeddedmq.DefaultTenantMaxBytes,
			},
			NATS: NATS{
				Replicas: natsmq.DefaultReplicas, MaxBytes: jsmq.DefaultMaxBytes, DLQMaxBytes: jsmq.DefaultDLQMaxBytes,
				DuplicateWindow: Duration(jsmq.DefaultDuplicateWindow), MaxAckPending: jsmq.DefaultMaxAckPending,
			},
		},
		Cache: Cache{
			Backend: "local",
			Local:   LocalCache{MaxBytes: localcache.DefaultMaxBytes},
			Redis:   Redis{KeyPrefix: rediscache.DefaultKeyPrefix, Timeout: Duration(rediscache.DefaultTimeout)},
		},
		Dedupe: Dedupe{
			Backend:  "local",
			DynamoDB: DynamoDB{Table: "wavehouse_dedupe", Region: "us-east-1"},
		},
		Coord: Coord{Backend: "local", Lease: Duration(coord.DefaultLease)},
	}
}
