// Package config reads, checks and prints the boot configuration: config.yaml overlaid by WH_*
// environment variables. Each layer's backend has its own typed sub-block that is validated only
// when that backend is selected. Nothing mutates a Config after Validate.
package config

// Config is the boot configuration of one wavehouse process.
type Config struct {
	Server               Server      `yaml:"server" env-prefix:"WH_SERVER_"`
	Ops                  Ops         `yaml:"ops" env-prefix:"WH_OPS_"`
	DataDir              string      `yaml:"data_dir" env:"WH_DATA_DIR" env-description:"Directory for embedded backends' data (queue, chDB, dedupe)."`
	SettingsDir          string      `yaml:"settings_dir" env:"WH_SETTINGS_DIR" env-description:"Directory of hot-reloaded settings: tenants/<tenant>.yaml (database, API keys, limits) and pipes (see docs/tenants.md)."`
	SettingsPollInterval Duration    `yaml:"settings_poll_interval" env:"WH_SETTINGS_POLL_INTERVAL" env-description:"How often settings_dir is checked for changes (a change applies once it stayed the same for one interval)."`
	Roles                Roles       `yaml:"roles" env:"WH_ROLES" env-description:"Roles this process runs: any of api, ingest, sweeper (comma-separated)."`
	InstanceID           string      `yaml:"instance_id" env:"WH_INSTANCE_ID" env-description:"Name of this process in leases, logs and metrics; default <hostname>-<8 hex>."`
	ShutdownTimeout      Duration    `yaml:"shutdown_timeout" env:"WH_SHUTDOWN_TIMEOUT" env-description:"How long a graceful shutdown may take before work is abandoned."`
	Log                  Log         `yaml:"log" env-prefix:"WH_LOG_"`
	Tracing              Tracing     `yaml:"tracing" env-prefix:"WH_TRACING_"`
	Memory               Memory      `yaml:"memory" env-prefix:"WH_MEMORY_"`
	Auth                 Auth        `yaml:"auth" env-prefix:"WH_AUTH_"`
	OpsSQL               OpsSQL      `yaml:"ops_sql" env-prefix:"WH_OPS_SQL_"`
	Limits               Limits      `yaml:"limits" env-prefix:"WH_LIMITS_"`
	Idempotency          Idempotency `yaml:"idempotency" env-prefix:"WH_IDEMPOTENCY_"`
	Ingest               Ingest      `yaml:"ingest" env-prefix:"WH_INGEST_"`
	Stream               Stream      `yaml:"stream" env-prefix:"WH_STREAM_"`
	Sweeper              Sweeper     `yaml:"sweeper" env-prefix:"WH_SWEEPER_"`
	Store                Store       `yaml:"store" env-prefix:"WH_STORE_"`
	MQ                   MQ          `yaml:"mq" env-prefix:"WH_MQ_"`
	Cache                Cache       `yaml:"cache" env-prefix:"WH_CACHE_"`
	Dedupe               Dedupe      `yaml:"dedupe" env-prefix:"WH_DEDUPE_"`
	Coord                Coord       `yaml:"coord" env-prefix:"WH_COORD_"`
}

// Server is the public API listener.
type Server struct {
	Listen            string   `yaml:"listen" env:"LISTEN" env-description:"Address of the API listener. A non-loopback address needs auth (or auth.allow_anonymous)."`
	ReadHeaderTimeout Duration `yaml:"read_header_timeout" env:"READ_HEADER_TIMEOUT" env-description:"Time allowed to read request headers."`
	IdleTimeout       Duration `yaml:"idle_timeout" env:"IDLE_TIMEOUT" env-description:"Keep-alive idle timeout."`
}

// Ops is the operator listener: probes, metrics, version, pprof.
type Ops struct {
	Listen string `yaml:"listen" env:"LISTEN" env-description:"Address of the ops listener (/livez, /readyz, /metrics, /version, /debug/pprof)."`
	Pprof  bool   `yaml:"pprof" env:"PPROF" env-description:"Serve /debug/pprof/* on the ops listener (never on the API listener)."`
}

// Log configures the process logger.
type Log struct {
	Level  string `yaml:"level" env:"LEVEL" env-description:"debug, info, warn or error."`
	Format string `yaml:"format" env:"FORMAT" env-description:"json or text."`
}

// Tracing switches OpenTelemetry tracing; where spans go and how they are sampled is set by the
// standard OTEL_* variables (docs/tracing.md), which are not repeated here.
type Tracing struct {
	Enabled bool `yaml:"enabled" env:"ENABLED" env-description:"Create spans and export them over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT (sampler, service name, headers: the standard OTEL_* variables, see docs/tracing.md). Off: no span is created."`
}

// Memory is the process's memory budget: the Go runtime's soft memory limit (docs/operations.md).
type Memory struct {
	Limit         int64 `yaml:"limit" env:"LIMIT" env-description:"Soft memory limit of the Go heap in bytes (the GC works harder near it); 0: memory.cgroup_percent of the cgroup memory limit when there is one, else 64 MiB plus 64 MiB per processor (GOMAXPROCS; 192 MiB on two), 96 MiB per processor with store chdb (256 MiB on two); -1: none. The GOMEMLIMIT environment variable wins over both."`
	CgroupPercent int   `yaml:"cgroup_percent" env:"CGROUP_PERCENT" env-description:"Share (1-100) of the cgroup memory limit used as the soft limit when memory.limit is 0."`
}

// Auth holds the boot-time access switches; API keys live in the settings directory.
type Auth struct {
	AllowAnonymous  bool   `yaml:"allow_anonymous" env:"ALLOW_ANONYMOUS" env-description:"Allow a non-loopback API listener without API keys (ingest, query and stream; never /v1/ops/*). Logged loudly at every boot."`
	OperatorKeyFile string `yaml:"operator_key_file" env:"OPERATOR_KEY_FILE" env-description:"File holding the operator key (at least 32 characters) that guards /v1/ops/*; empty: <data_dir>/operator.key, a random key the gateway generates (mode 0600) at first boot and logs the path of. Read again on SIGHUP."`
}

// OpsSQL tunes POST /v1/ops/sql.
type OpsSQL struct {
	AllowHostTableFunctions bool `yaml:"allow_host_table_functions" env:"ALLOW_HOST_TABLE_FUNCTIONS" env-description:"Let operator SQL use table functions, engines and dictionary sources that touch the server's files or the network (file, url, s3, remote, executable, mysql, …) and INTO OUTFILE. Logged at every boot when on."`
}

// Limits says how long a request may wait for a tenant's limits, and holds the defaults of the
// tenants' query limits; the limits themselves live in the settings directory.
type Limits struct {
	MaxWait              Duration `yaml:"max_wait" env:"MAX_WAIT" env-description:"Longest a request waits for rate tokens instead of a 429 (never past its deadline); 0 refuses at once."`
	QueryWait            Duration `yaml:"query_wait" env:"QUERY_WAIT" env-description:"Longest a query waits for one of its tenant's concurrent-query slots; 0 refuses at once."`
	MaxConcurrentQueries int      `yaml:"max_concurrent_queries" env:"MAX_CONCURRENT_QUERIES" env-description:"Default of a tenant's limits.max_concurrent_queries: its queries and pipe calls running at once in one api process (429 beyond); -1: no limit."`
	MaxResultRows        int64    `yaml:"max_result_rows" env:"MAX_RESULT_ROWS" env-description:"Default of a tenant's limits.max_result_rows: the most rows one query returns (422 query.limit_exceeded beyond); -1: no limit."`
	MaxResultBytes       int64    `yaml:"max_result_bytes" env:"MAX_RESULT_BYTES" env-description:"Default of a tenant's limits.max_result_bytes: the most uncompressed bytes one query returns (422 beyond); -1: no limit."`
	MaxExecutionTime     Duration `yaml:"max_execution_time" env:"MAX_EXECUTION_TIME" env-description:"Default of a tenant's limits.max_execution_time: how long one query may run (422 beyond; whole seconds on ClickHouse 18.16)."`
	CacheTTL             Duration `yaml:"cache_ttl" env:"CACHE_TTL" env-description:"Default of a tenant's limits.cache_ttl: how long query results stay cached (a pipe's @ttl wins)."`
}

// Idempotency switches Idempotency-Key handling on ingest.
type Idempotency struct {
	Enabled   bool     `yaml:"enabled" env:"ENABLED" env-description:"Honour Idempotency-Key on ingest (needs a shared dedupe backend when api runs in several processes)."`
	Lease     Duration `yaml:"lease" env:"LEASE" env-description:"How long a request holds its key before a retry may claim it; keep it below the queue's 2 min duplicate window."`
	Retention Duration `yaml:"retention" env:"RETENTION" env-description:"How long a recorded response is replayed to retries with the same key."`
}

// Ingest bounds ingest requests and tunes the batching of inserts.
type Ingest struct {
	MaxBodyBytes int64       `yaml:"max_body_bytes" env:"MAX_BODY_BYTES" env-description:"Largest request body, as sent and after decompression (413 beyond)."`
	MaxRows      int         `yaml:"max_rows" env:"MAX_ROWS" env-description:"Most rows in one request (413 beyond)."`
	MaxErrors    int         `yaml:"max_errors" env:"MAX_ERRORS" env-description:"Most row errors reported in one response (counts stay exact)."`
	WaitTimeout  Duration    `yaml:"wait_timeout" env:"WAIT_TIMEOUT" env-description:"How long ?wait=committed waits for the rows to reach ClickHouse."`
	Flush        IngestFlush `yaml:"flush" env-prefix:"FLUSH_"`
}

// IngestFlush decides when buffered rows of a table are inserted.
type IngestFlush struct {
	MaxRows  int      `yaml:"max_rows" env:"MAX_ROWS" env-description:"Insert a table's buffered rows once this many are buffered (the insert then takes everything buffered, up to max_bytes and 1,048,576 rows)."`
	MaxBytes int      `yaml:"max_bytes" env:"MAX_BYTES" env-description:"Insert a table's buffered rows once they take this many bytes."`
	MaxWait  Duration `yaml:"max_wait" env:"MAX_WAIT" env-description:"Insert a table's buffered rows this long after the oldest arrived."`
}

// Stream configures the retained history that live streams resume from.
type Stream struct {
	HistoryWindow  Duration `yaml:"history_window" env:"HISTORY_WINDOW" env-description:"How long accepted rows stay in the queue's history after they are inserted (SSE resume window), at most: while a partition stream holds more than half its max_bytes the sweeper trims its oldest inserted rows sooner."`
	Heartbeat      Duration `yaml:"heartbeat" env:"HEARTBEAT" env-description:"Period of the SSE heartbeat comment that keeps proxies from closing idle streams."`
	Retry          Duration `yaml:"retry" env:"RETRY" env-description:"Reconnect delay suggested to SSE clients (retry: field)."`
	Buffer         int      `yaml:"buffer" env:"BUFFER" env-description:"Events a live subscriber may have queued before slow_policy applies."`
	SlowPolicy     string   `yaml:"slow_policy" env:"SLOW_POLICY" env-description:"gap (send event: gap with the missed ids) or disconnect (end the stream; the client resumes with Last-Event-ID)."`
	MaxSubscribers int      `yaml:"max_subscribers" env:"MAX_SUBSCRIBERS" env-description:"Open streams per tenant per api process (-1: unlimited); beyond it 429."`
	WriteTimeout   Duration `yaml:"write_timeout" env:"WRITE_TIMEOUT" env-description:"A write to an SSE client that takes longer ends the stream."`
}

// Sweeper configures the singleton housekeeping job.
type Sweeper struct {
	Interval Duration `yaml:"interval" env:"INTERVAL" env-description:"Time between two sweeps (history trim, expired idempotency records); whether a partition stream holds more than half its max_bytes is checked every interval or every 10s, whichever is shorter."`
}

// TLS is a client TLS configuration given as files.
type TLS struct {
	Enabled            bool   `yaml:"enabled" env:"ENABLED" env-description:"Use TLS."`
	CAFile             string `yaml:"ca_file" env:"CA_FILE" env-description:"PEM file of CAs to trust (default: system roots)."`
	CertFile           string `yaml:"cert_file" env:"CERT_FILE" env-description:"PEM client certificate for mutual TLS."`
	KeyFile            string `yaml:"key_file" env:"KEY_FILE" env-description:"PEM client key for mutual TLS."`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify" env:"INSECURE_SKIP_VERIFY" env-description:"Do not verify the server certificate (testing only)."`
}
