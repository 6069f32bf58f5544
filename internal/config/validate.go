package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/logging"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
	"github.com/wavehouse/wavehouse/internal/store/chdbstore"
)

// Validate reports every problem of the configuration at once, each naming the key and what to
// change. It has no side effects.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	checkListen := func(key, addr string) {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			add("%s: %q is not host:port (for example 127.0.0.1:8080)", key, addr)
		}
	}
	checkListen("server.listen", c.Server.Listen)
	checkListen("ops.listen", c.Ops.Listen)
	if c.Server.Listen == c.Ops.Listen && !strings.HasSuffix(c.Server.Listen, ":0") {
		add("ops.listen: must differ from server.listen (%s): pprof and metrics never share the API listener", c.Server.Listen)
	}
	if c.DataDir == "" {
		add("data_dir: must not be empty")
	}
	if c.ShutdownTimeout <= 0 {
		add("shutdown_timeout: must be positive, for example 30s")
	}
	if _, err := logging.ParseLevel(c.Log.Level); err != nil {
		add("log.level: %v", err)
	}
	if f := strings.ToLower(c.Log.Format); !slices.Contains(enumValues("log.format"), f) {
		add("log.format: %q is not json or text", c.Log.Format)
	}
	if c.Memory.Limit < -1 {
		add("memory.limit: %d is not a byte count, 0 (from the cgroup, else the default) or -1 (none)", c.Memory.Limit)
	}
	if c.Memory.CgroupPercent < 1 || c.Memory.CgroupPercent > 100 {
		add("memory.cgroup_percent: %d is not between 1 and 100", c.Memory.CgroupPercent)
	}
	for _, p := range []struct {
		key string
		ok  bool
	}{
		{"ingest.max_body_bytes", c.Ingest.MaxBodyBytes > 0}, {"ingest.max_rows", c.Ingest.MaxRows > 0},
		{"ingest.max_errors", c.Ingest.MaxErrors > 0}, {"ingest.wait_timeout", c.Ingest.WaitTimeout > 0},
		{"ingest.flush.max_rows", c.Ingest.Flush.MaxRows > 0}, {"ingest.flush.max_bytes", c.Ingest.Flush.MaxBytes > 0},
		{"ingest.flush.max_wait", c.Ingest.Flush.MaxWait > 0},
		{"idempotency.lease", c.Idempotency.Lease > 0}, {"idempotency.retention", c.Idempotency.Retention > 0},
		{"stream.history_window", c.Stream.HistoryWindow > 0}, {"stream.heartbeat", c.Stream.Heartbeat > 0},
		{"stream.retry", c.Stream.Retry > 0}, {"stream.buffer", c.Stream.Buffer > 0}, {"stream.write_timeout", c.Stream.WriteTimeout > 0}, {"mq.ack_wait", c.MQ.AckWait > 0}, {"sweeper.interval", c.Sweeper.Interval > 0},
		{"settings_poll_interval", c.SettingsPollInterval > 0},
	} {
		if !p.ok {
			add("%s: must be positive", p.key)
		}
	}
	errs = append(errs, c.validateRoles()...)
	errs = append(errs, c.validateBackends()...)
	errs = append(errs, c.validateTopology()...)
	if c.Limits.MaxWait < 0 || c.Limits.QueryWait < 0 {
		add("limits.max_wait, limits.query_wait: must not be negative")
	}
	for _, l := range []struct {
		key string
		v   int64
	}{
		{"limits.max_concurrent_queries", int64(c.Limits.MaxConcurrentQueries)},
		{"limits.max_result_rows", c.Limits.MaxResultRows}, {"limits.max_result_bytes", c.Limits.MaxResultBytes},
	} {
		if l.v == 0 || l.v < -1 {
			add("%s: %d must be positive, or -1 for no limit", l.key, l.v)
		}
	}
	if c.Limits.MaxExecutionTime <= 0 || c.Limits.CacheTTL <= 0 {
		add("limits.max_execution_time, limits.cache_ttl: must be positive (a tenant may set -1 for no time limit)")
	}
	return errors.Join(errs...)
}

func (c Config) validateRoles() []error {
	var errs []error
	if len(c.Roles) == 0 {
		errs = append(errs, errors.New("roles: must name at least one of api, ingest, sweeper"))
	}
	seen := map[Role]bool{}
	for _, r := range c.Roles {
		if !slices.Contains(AllRoles, r) {
			errs = append(errs, fmt.Errorf("roles: unknown role %q (want api, ingest or sweeper)", r))
		}
		if seen[r] {
			errs = append(errs, fmt.Errorf("roles: %q is listed twice", r))
		}
		seen[r] = true
	}
	return errs
}

func (c Config) validateBackends() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	oneOf := func(key, got string) bool {
		want := enumValues(key)
		if slices.Contains(want, got) {
			return true
		}
		add("%s: %q is not one of %s", key, got, strings.Join(want, ", "))
		return false
	}
	if oneOf("store.backend", c.Store.Backend) && c.Store.Backend == "clickhouse" {
		if len(c.Store.ClickHouse.Addrs) == 0 && len(c.Store.ClickHouse.Cluster.Shards) == 0 {
			add("store.clickhouse.addrs: set at least one host:port of the ClickHouse native protocol (usually port 9000), or store.clickhouse.cluster.shards")
		}
		if c.Store.ClickHouse.DialTimeout <= 0 {
			add("store.clickhouse.dial_timeout: must be positive")
		}
		if c.Store.ClickHouse.MaxOpenConns <= 0 {
			add("store.clickhouse.max_open_conns: must be positive")
		}
	}
	if c.Store.Backend == "chdb" {
		if err := chdbstore.ValidateMaxMemory(c.Store.CHDB.MaxMemoryBytes); err != nil {
			errs = append(errs, err)
		}
	}
	if oneOf("store.clickhouse.cluster.insert", c.Store.ClickHouse.Cluster.Insert) && c.Store.Backend == "clickhouse" {
		errs = append(errs, c.Store.ClickHouse.Cluster.validate()...)
	}
	if c.MQ.Prefix == "" || strings.ContainsAny(c.MQ.Prefix, ".*> \t") {
		add("mq.prefix: %q must be non-empty without dots, wildcards or spaces", c.MQ.Prefix)
	}
	if c.MQ.Partitions < 1 || c.MQ.Partitions > 256 {
		add("mq.partitions: %d must be between 1 and 256", c.MQ.Partitions)
	}
	if oneOf("mq.backend", c.MQ.Backend) {
		switch c.MQ.Backend {
		case "embedded":
			if oneOf("mq.embedded.sync", c.MQ.Embedded.Sync) &&
				c.MQ.Embedded.Sync == "interval" && c.MQ.Embedded.SyncInterval <= 0 {
				add("mq.embedded.sync_interval: must be positive when mq.embedded.sync is interval")
			}
		case "nats":
			errs = append(errs, validateNATS(c.MQ.NATS)...)
		}
	}
	if oneOf("cache.backend", c.Cache.Backend) {
		switch c.Cache.Backend {
		case "local":
			if c.Cache.Local.MaxBytes <= 0 {
				add("cache.local.max_bytes: must be positive")
			}
		case "redis":
			if len(c.Cache.Redis.Addrs) == 0 {
				add("cache.redis.addrs: set at least one host:port")
			}
			if c.Cache.Redis.Timeout <= 0 {
				add("cache.redis.timeout: must be positive, for example 100ms")
			}
		}
	}
	if oneOf("dedupe.backend", c.Dedupe.Backend) && c.Dedupe.Backend == "dynamodb" {
		d := c.Dedupe.DynamoDB
		if d.Table == "" {
			add("dedupe.dynamodb.table: must not be empty")
		}
		if d.Region == "" {
			add("dedupe.dynamodb.region: must not be empty")
		}
		if d.CreateTable && d.Endpoint == "" {
			add("dedupe.dynamodb.create_table: only allowed with dedupe.dynamodb.endpoint (create the AWS table with your infrastructure tooling)")
		}
		if (d.AccessKeyIDFile == "") != (d.SecretAccessKeyFile == "") {
			add("dedupe.dynamodb: set both access_key_id_file and secret_access_key_file, or neither")
		}
	}
	window, windowKey := Duration(c.DuplicateWindow()), "the embedded queue's"
	if c.MQ.Backend == "nats" {
		windowKey = "mq.nats.duplicate_window"
	}
	if c.Idempotency.Lease >= window {
		add("idempotency.lease: %s must stay below %s %s duplicate window, which covers a crash between publish and commit", c.Idempotency.Lease, windowKey, window)
	}
	oneOf("stream.slow_policy", c.Stream.SlowPolicy)
	if oneOf("coord.backend", c.Coord.Backend) && c.Coord.Lease <= 0 {
		add("coord.lease: must be positive")
	}
	return errs
}

func validateNATS(n NATS) []error {
	var errs []error
	if len(n.URLs) == 0 {
		errs = append(errs, errors.New("mq.nats.urls: set at least one nats://host:port"))
	}
	for i, raw := range n.URLs {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			errs = append(errs, fmt.Errorf("mq.nats.urls[%d]: %q is not a URL like nats://host:4222", i, redactURL(raw)))
			continue
		}
		if u.User != nil {
			errs = append(errs, fmt.Errorf("mq.nats.urls[%d]: credentials in URLs are not allowed: use mq.nats.user with mq.nats.password_file, or creds_file/nkey_file", i))
		}
	}
	if n.PasswordFile != "" && n.User == "" {
		errs = append(errs, errors.New("mq.nats.user: required with mq.nats.password_file"))
	}
	if n.DuplicateWindow <= 0 {
		errs = append(errs, errors.New("mq.nats.duplicate_window: must be positive"))
	}
	if n.MaxAckPending < 1 {
		errs = append(errs, errors.New("mq.nats.max_ack_pending: must be at least 1"))
	}
	if n.Replicas < 1 || n.Replicas > 5 {
		errs = append(errs, fmt.Errorf("mq.nats.replicas: %d must be between 1 and 5", n.Replicas))
	}
	return errs
}

// validateTopology enforces DESIGN.md §5: role splits that cannot work are refused.
func (c Config) validateTopology() []error {
	var errs []error
	split := !c.Roles.All()
	if split && c.MQ.Backend == "embedded" {
		errs = append(errs, fmt.Errorf("mq.backend: embedded cannot be shared between processes, but roles is %q: run all roles in one process or set mq.backend: nats", c.Roles))
	}
	if split && c.Roles.Uses("store") && c.Store.Backend == "chdb" {
		errs = append(errs, fmt.Errorf("store.backend: chdb is in-process and cannot be shared, but roles is %q: run all roles in one process or set store.backend: clickhouse", c.Roles))
	}
	if c.Coord.Backend == "nats" && c.MQ.Backend != "nats" {
		errs = append(errs, errors.New("coord.backend: nats keeps leases on the mq.nats connection: set mq.backend: nats, or coord.backend: local"))
	}
	if split && c.Roles.Has(RoleSweeper) && c.Coord.Backend == "local" {
		errs = append(errs, errors.New("coord.backend: local leases cannot stop a sweeper in another process from running too: set coord.backend: nats when the sweeper role runs apart from the others"))
	}
	if c.Roles.Has(RoleAPI) != c.Roles.Has(RoleIngest) && c.Cache.Backend == "local" {
		errs = append(errs, errors.New("cache.backend: local cannot receive invalidations from inserts in another process (api and ingest run apart): set cache.backend: redis"))
	}
	if split && c.Roles.Uses("dedupe") && c.Idempotency.Enabled && c.Dedupe.Backend == "local" {
		errs = append(errs, errors.New("dedupe.backend: local keeps idempotency keys in one process, but roles are split: set dedupe.backend: dynamodb, or idempotency.enabled: false"))
	}
	return errs
}

// Warnings lists the combinations that work but carry a risk an operator should know about.
// They are logged at boot and printed by `wavehouse config check`.
func (c Config) Warnings() []string {
	var w []string
	if c.MQ.Backend == "embedded" {
		switch c.MQ.Embedded.Sync {
		case "interval":
			w = append(w, fmt.Sprintf("mq.embedded.sync is interval: an acknowledged ingest may be lost on power loss or kernel crash within %s (a process crash loses nothing)", c.MQ.Embedded.SyncInterval))
		case "none":
			w = append(w, fmt.Sprintf("mq.embedded.sync is none: acknowledged ingest lives in the page cache until the OS writes it or the queue's background fsync runs (every %s); a power loss or kernel crash can lose up to that window (a process crash loses nothing)", embeddedmq.NoneFlushInterval))
		}
	}
	if c.Ops.Pprof && !isLoopback(c.Ops.Listen) {
		w = append(w, fmt.Sprintf("ops.listen %s is not loopback and ops.pprof is on: profiles and metrics are reachable from the network", c.Ops.Listen))
	}
	if c.MQ.Backend == "nats" && c.MQ.NATS.Replicas < 3 {
		w = append(w, fmt.Sprintf("mq.nats.replicas is %d: a 2xx is only as durable as %d server(s); use 3 in production", c.MQ.NATS.Replicas, c.MQ.NATS.Replicas))
	}
	if c.MQ.Backend == "nats" && c.MQ.NATS.ManageTopology {
		w = append(w, "mq.nats.manage_topology is true: wavehouse creates streams itself; in production let the operator own them (wavehouse mq manifests)")
	}
	d := Default()
	unused := func(key string, selected bool, block, def any) {
		if !selected && !equalValues(block, def) {
			w = append(w, fmt.Sprintf("%s is set but not used by the selected backend", key))
		}
	}
	unused("store.clickhouse", c.Store.Backend == "clickhouse", c.Store.ClickHouse, d.Store.ClickHouse)
	unused("mq.nats", c.MQ.Backend == "nats" || c.Coord.Backend == "nats", c.MQ.NATS, d.MQ.NATS)
	unused("cache.redis", c.Cache.Backend == "redis", c.Cache.Redis, d.Cache.Redis)
	unused("dedupe.dynamodb", c.Dedupe.Backend == "dynamodb", c.Dedupe.DynamoDB, d.Dedupe.DynamoDB)
	return w
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// DuplicateWindow is the queue's duplicate window: mq.nats.duplicate_window on the nats
// backend, the embedded queue's fixed one otherwise.
func (c Config) DuplicateWindow() time.Duration {
	if c.MQ.Backend == "nats" {
		return c.MQ.NATS.DuplicateWindow.D()
	}
	return jsmq.DefaultDuplicateWindow
}
