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
		Ops:             Ops{Listen: "127.0.0.1:9090", Pprof: true},
		DataDir:         "./data",
		Roles:           Roles{RoleAPI, RoleIngest, RoleSweeper},
		ShutdownTimeout: Duration(30 * time.Second),
		Log:             Log{Level: "info", Format: "json"},
		Idempotency:     Idempotency{Enabled: true},
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
			Backend:    "embedded",
			Prefix:     "wh",
			Partitions: 4,
			Embedded:   MQEmbedded{Sync: "always", SyncInterval: Duration(100 * time.Millisecond)},
			NATS:       NATS{Replicas: 3},
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
