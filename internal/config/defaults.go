package config

import "time"

// Default returns the configuration of a process started with no config file and no WH_*
// variables: all roles, every layer embedded, listeners on loopback.
func Default() Config {
	return Config{
		Server: Server{
			Listen:            "127.0.0.1:8080",
			ReadHeaderTimeout: Duration(10 * time.Second),
			IdleTimeout:       Duration(120 * time.Second),
		},
		Ops:                  Ops{Listen: "127.0.0.1:9090", Pprof: true},
		DataDir:              "./data",
		SettingsDir:          "./settings",
		SettingsPollInterval: Duration(2 * time.Second),
		Roles:                Roles{RoleAPI, RoleIngest, RoleSweeper},
		ShutdownTimeout:      Duration(30 * time.Second),
		Log:                  Log{Level: "info", Format: "json"},
		Limits: Limits{
			MaxConcurrentQueries: 16, MaxResultRows: 1_000_000, MaxResultBytes: 1 << 30,
			MaxExecutionTime: Duration(30 * time.Second), CacheTTL: Duration(time.Minute),
		},
		Idempotency: Idempotency{Enabled: true, Lease: Duration(30 * time.Second), Retention: Duration(24 * time.Hour)},
		Ingest: Ingest{
			MaxBodyBytes: 16 << 20,
			MaxRows:      100_000,
			MaxErrors:    100,
			WaitTimeout:  Duration(10 * time.Second),
			Flush:        IngestFlush{MaxRows: 10_000, MaxBytes: 16 << 20, MaxWait: Duration(time.Second)},
		},
		Stream: Stream{
			HistoryWindow: Duration(24 * time.Hour), Heartbeat: Duration(15 * time.Second), Retry: Duration(2 * time.Second),
			Buffer: 1024, SlowPolicy: "gap", MaxSubscribers: 1000, WriteTimeout: Duration(30 * time.Second),
		},
		Sweeper: Sweeper{Interval: Duration(time.Minute)},
		Store: Store{
			Backend: "chdb",
			ClickHouse: ClickHouse{
				Database:     "default",
				User:         "default",
				DialTimeout:  Duration(5 * time.Second),
				MaxOpenConns: 16,
			},
		},
		MQ: MQ{
			Backend:      "embedded",
			Prefix:       "wh",
			Partitions:   4,
			AckWait:      Duration(30 * time.Second),
			DLQRetention: Duration(7 * 24 * time.Hour),
			Embedded:     MQEmbedded{Sync: "always", SyncInterval: Duration(100 * time.Millisecond), MaxBytes: 1 << 30, TenantMaxBytes: 256 << 20},
			NATS:         NATS{Replicas: 3},
		},
		Cache: Cache{
			Backend: "local",
			Local:   LocalCache{MaxBytes: 256 << 20},
			Redis:   Redis{KeyPrefix: "wh:", Timeout: Duration(100 * time.Millisecond)},
		},
		Dedupe: Dedupe{
			Backend:  "local",
			DynamoDB: DynamoDB{Table: "wavehouse_dedupe", Region: "us-east-1"},
		},
		Coord: Coord{Backend: "local", Lease: Duration(15 * time.Second)},
	}
}
