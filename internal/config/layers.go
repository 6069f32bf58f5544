package config

// Store selects where the data lives.
type Store struct {
	Backend    string     `yaml:"backend" env:"BACKEND" env-description:"chdb (embedded ClickHouse engine) or clickhouse (a ClickHouse server)."`
	CHDB       CHDB       `yaml:"chdb" env-prefix:"CHDB_"`
	ClickHouse ClickHouse `yaml:"clickhouse" env-prefix:"CLICKHOUSE_"`
}

// CHDB configures the embedded ClickHouse engine.
type CHDB struct {
	LibPath string `yaml:"lib_path" env:"LIB_PATH" env-description:"Path of libchdb.so; default CHDB_LIB_PATH, then next to the binary."`
	Path    string `yaml:"path" env:"PATH" env-description:"Engine data directory; default <data_dir>/chdb."`
	// MaxMemoryBytes is chdbstore.Config.MaxMemoryBytes.
	MaxMemoryBytes int64 `yaml:"max_memory_bytes" env:"MAX_MEMORY_BYTES" env-description:"Bound on the memory the engine allocates, all statements together (its max_server_memory_usage); its mark, index-mark and primary-index caches get an eighth each. At least 128 MiB; -1: the engine's own bound (90% of RAM, caches up to 5 GiB each)."`
}

// ClickHouse configures a ClickHouse server reached over the native protocol.
type ClickHouse struct {
	Addrs        []string `yaml:"addrs" env:"ADDRS" env-separator:"," env-description:"Native-protocol addresses host:port."`
	HTTPAddrs    []string `yaml:"http_addrs" env:"HTTP_ADDRS" env-separator:"," env-description:"HTTP-interface addresses host:port (usually port 8123). Inserts go there as RowBinary, sent as queued; when empty they take the native protocol, which converts every value first."`
	Database     string   `yaml:"database" env:"DATABASE" env-description:"Database of the default tenant."`
	User         string   `yaml:"user" env:"USER" env-description:"User name."`
	PasswordFile string   `yaml:"password_file" env:"PASSWORD_FILE" env-description:"File holding the password."`
	DialTimeout  Duration `yaml:"dial_timeout" env:"DIAL_TIMEOUT" env-description:"Connect timeout; an unreachable server is reported as unavailable after it."`
	MaxOpenConns int      `yaml:"max_open_conns" env:"MAX_OPEN_CONNS" env-description:"Connection pool size per tenant target."`
	TLS          TLS      `yaml:"tls" env-prefix:"TLS_"`
	// Cluster, when it lists shards, makes addrs optional (default: every replica).
	Cluster ClickHouseCluster `yaml:"cluster" env-prefix:"CLUSTER_"`
}

// ClickHouseCluster describes a sharded, replicated ClickHouse cluster behind store.clickhouse.
type ClickHouseCluster struct {
	Name   string        `yaml:"name" env:"NAME" env-description:"The cluster's name in remote_servers (the first argument of its Distributed tables); required with shards."`
	Insert string        `yaml:"insert" env:"INSERT" env-description:"distributed (into the Distributed table, synchronously) or local (rows routed by the Distributed table's sharding key straight into each shard's local table, failing over between its replicas)."`
	Shards ClusterShards `yaml:"shards" env:"SHARDS" env-description:"Shards in shard_num order, each a list of replicas: YAML [{replicas: [host:port, …]}, …]; in the variable, replicas comma-separated and shards separated by ';'. Empty: a single server (no cluster)."`
}

// MQ selects the durable queue.
type MQ struct {
	Backend      string     `yaml:"backend" env:"BACKEND" env-description:"embedded (NATS JetStream in-process) or nats (an external NATS JetStream)."`
	Prefix       string     `yaml:"prefix" env:"PREFIX" env-description:"Prefix of every subject, stream and bucket name."`
	Partitions   int        `yaml:"partitions" env:"PARTITIONS" env-description:"Number of ingest partitions; each table maps to one by a stable hash."`
	DLQRetention Duration   `yaml:"dlq_retention" env:"DLQ_RETENTION" env-description:"How long dead-lettered records are kept before the sweeper removes them (0: forever)."`
	AckWait      Duration   `yaml:"ack_wait" env:"ACK_WAIT" env-description:"How long a frame handed to an ingest process may stay unacknowledged before another gets it (a killed ingest process costs this much delay)."`
	Embedded     MQEmbedded `yaml:"embedded" env-prefix:"EMBEDDED_"`
	NATS         NATS       `yaml:"nats" env-prefix:"NATS_"`
}

// MQEmbedded configures the in-process JetStream server.
type MQEmbedded struct {
	Sync           string   `yaml:"sync" env:"SYNC" env-description:"always (fsync before ack), interval (fsync every sync_interval: may lose that window on power loss) or none (page cache only, with a background fsync every 2m: may lose up to that window on power loss)."`
	SyncInterval   Duration `yaml:"sync_interval" env:"SYNC_INTERVAL" env-description:"fsync period when sync is interval."`
	Dir            string   `yaml:"dir" env:"DIR" env-description:"Store directory; default <data_dir>/mq."`
	MaxBytes       int64    `yaml:"max_bytes" env:"MAX_BYTES" env-description:"Byte bound of each partition stream; beyond it ingest answers 429 (0: no limit). Inserted history is trimmed to half of it, sooner than stream.history_window when needed."`
	TenantMaxBytes int64    `yaml:"tenant_max_bytes" env:"TENANT_MAX_BYTES" env-description:"Byte budget of one tenant's unconsumed records; beyond it the tenant's ingest answers 429 (0: no limit)."`
}

// NATS configures a connection to an external NATS JetStream and the topology it must hold. TLS is
// on when tls.enabled is true, when any other tls key is set, or for tls:// URLs.
type NATS struct {
	URLs            []string `yaml:"urls" env:"URLS" env-separator:"," env-description:"Server URLs (nats://host:port). No credentials in URLs: use the *_file keys."`
	CredsFile       string   `yaml:"creds_file" env:"CREDS_FILE" env-description:"NATS credentials (JWT + seed) file."`
	NKeySeedFile    string   `yaml:"nkey_seed_file" env:"NKEY_SEED_FILE" env-description:"NKey seed file."`
	User            string   `yaml:"user" env:"USER" env-description:"User name for user/password auth."`
	PasswordFile    string   `yaml:"password_file" env:"PASSWORD_FILE" env-description:"File holding the password."`
	Replicas        int      `yaml:"replicas" env:"REPLICAS" env-description:"Stream and bucket replicas expected (3 in production)."`
	ManageTopology  bool     `yaml:"manage_topology" env:"MANAGE_TOPOLOGY" env-description:"Create streams, consumers and buckets at boot (development); otherwise verify them and refuse to boot when they differ."`
	MaxBytes        int64    `yaml:"max_bytes" env:"MAX_BYTES" env-description:"Byte bound of each partition stream; beyond it ingest answers 429 (0 or -1: no limit). Inserted history is trimmed to half of it, sooner than stream.history_window when needed. Part of the verified topology."`
	DLQMaxBytes     int64    `yaml:"dlq_max_bytes" env:"DLQ_MAX_BYTES" env-description:"Byte bound of the dead-letter stream (0 or -1: no limit). Part of the verified topology."`
	DuplicateWindow Duration `yaml:"duplicate_window" env:"DUPLICATE_WINDOW" env-description:"How long the streams suppress a repeated idempotency key; idempotency.lease must stay below it. Part of the verified topology."`
	MaxAckPending   int      `yaml:"max_ack_pending" env:"MAX_ACK_PENDING" env-description:"Unacknowledged deliveries per partition consumer. Part of the verified topology."`
	TLS             TLS      `yaml:"tls" env-prefix:"TLS_"`
}

// Cache selects the query result cache.
type Cache struct {
	Backend string     `yaml:"backend" env:"BACKEND" env-description:"local (in-process) or redis (shared)."`
	Local   LocalCache `yaml:"local" env-prefix:"LOCAL_"`
	Redis   Redis      `yaml:"redis" env-prefix:"REDIS_"`
}

// LocalCache configures the in-process cache.
type LocalCache struct {
	MaxBytes int64 `yaml:"max_bytes" env:"MAX_BYTES" env-description:"Byte bound of cached results."`
}

// Redis configures a Redis or Valkey cache.
type Redis struct {
	Addrs        []string `yaml:"addrs" env:"ADDRS" env-separator:"," env-description:"host:port of the server or cluster seed nodes."`
	Cluster      bool     `yaml:"cluster" env:"CLUSTER" env-description:"Use the cluster protocol."`
	Username     string   `yaml:"username" env:"USERNAME" env-description:"ACL user name."`
	PasswordFile string   `yaml:"password_file" env:"PASSWORD_FILE" env-description:"File holding the password."`
	DB           int      `yaml:"db" env:"DB" env-description:"Database number (standalone only)."`
	KeyPrefix    string   `yaml:"key_prefix" env:"KEY_PREFIX" env-description:"Prefix of every key."`
	Timeout      Duration `yaml:"timeout" env:"TIMEOUT" env-description:"Per-operation timeout; a slow cache is bypassed, never waited on."`
	TLS          TLS      `yaml:"tls" env-prefix:"TLS_"`
}

// Dedupe selects where idempotency keys are kept.
type Dedupe struct {
	Backend  string      `yaml:"backend" env:"BACKEND" env-description:"local (Pebble on disk) or dynamodb."`
	Local    LocalDedupe `yaml:"local" env-prefix:"LOCAL_"`
	DynamoDB DynamoDB    `yaml:"dynamodb" env-prefix:"DYNAMODB_"`
}

// LocalDedupe configures the Pebble dedupe store.
type LocalDedupe struct {
	Dir string `yaml:"dir" env:"DIR" env-description:"Pebble directory; default <data_dir>/dedupe."`
}

// DynamoDB configures the DynamoDB dedupe store.
type DynamoDB struct {
	Table               string `yaml:"table" env:"TABLE" env-description:"Table name."`
	Region              string `yaml:"region" env:"REGION" env-description:"AWS region."`
	Endpoint            string `yaml:"endpoint" env:"ENDPOINT" env-description:"Custom endpoint (DynamoDB-compatible servers); empty for AWS."`
	CreateTable         bool   `yaml:"create_table" env:"CREATE_TABLE" env-description:"Create the table at boot; only with a custom endpoint."`
	AccessKeyIDFile     string `yaml:"access_key_id_file" env:"ACCESS_KEY_ID_FILE" env-description:"File holding the access key id (default: the AWS credential chain)."`
	SecretAccessKeyFile string `yaml:"secret_access_key_file" env:"SECRET_ACCESS_KEY_FILE" env-description:"File holding the secret access key."`
}

// Coord selects who runs singleton jobs.
type Coord struct {
	Backend string    `yaml:"backend" env:"BACKEND" env-description:"local (in-process) or nats (a KV bucket on the mq.nats connection)."`
	Lease   Duration  `yaml:"lease" env:"LEASE" env-description:"Lease duration of singleton jobs."`
	NATS    CoordNATS `yaml:"nats" env-prefix:"NATS_"`
}

// CoordNATS configures leases in a NATS KV bucket.
type CoordNATS struct {
	Bucket string `yaml:"bucket" env:"BUCKET" env-description:"KV bucket of leases; default <mq.prefix>_leases."`
}
