package clickhousestore

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"time"
)

// Defaults of the settings the boot config exposes; its defaults for store.clickhouse.user,
// dial_timeout and max_open_conns are these constants.
const (
	DefaultUsername     = "default"
	DefaultDialTimeout  = 5 * time.Second
	DefaultMaxOpenConns = 16
)

// Config configures the ClickHouse server backend (store.backend: clickhouse). internal/app fills
// the default Endpoint, DialTimeout and MaxOpenConns from the store.clickhouse block; the other
// fields have no config key.
type Config struct {
	// Endpoint is the default server; tenants without an entry in Tenants use it.
	Endpoint
	// Tenants overrides the server per tenant (address, credentials, TLS). Optional.
	Tenants map[string]Endpoint
	// DialTimeout bounds connecting; an unreachable server fails with store.ErrUnavailable
	// after it (store.clickhouse.dial_timeout). Default DefaultDialTimeout.
	DialTimeout time.Duration
	// ReadTimeout bounds one read from the server (a query with no block for that long fails
	// with store.ErrTimeout). Default 5m.
	ReadTimeout time.Duration
	// MaxOpenConns is the pool size per tenant target (store.clickhouse.max_open_conns).
	// Default DefaultMaxOpenConns.
	MaxOpenConns int
	// MaxIdleConns is the number of idle connections kept per target. Default 5.
	MaxIdleConns int
	// ConnMaxLifetime recycles connections. Default 1h.
	ConnMaxLifetime time.Duration
	// Compression of native blocks: none, lz4 or zstd. Default lz4.
	Compression string
	// Settings are integer server settings sent with every query (only integer and boolean
	// settings travel over the native protocol to old servers), e.g.
	// allow_experimental_low_cardinality_type: 1 for LowCardinality DDL on 18.16.
	Settings map[string]int
	// Cluster makes the default endpoint a sharded, replicated cluster (store.clickhouse.cluster).
	// Zero: a single server (or replicas the driver picks among in order).
	Cluster Cluster
}

// Insert modes of a cluster (store.clickhouse.cluster.insert).
const (
	// InsertDistributed inserts into the Distributed table, which splits the block by its
	// sharding key and writes each part to a replica of its shard (synchronously:
	// insert_distributed_sync = 1, so an unreachable shard fails the insert).
	InsertDistributed = "distributed"
	// InsertLocal routes the rows by the Distributed table's sharding key in the gateway and
	// inserts each shard's rows straight into its local table on one of its replicas.
	InsertLocal = "local"
)

// Cluster is a ClickHouse cluster as remote_servers names it.
type Cluster struct {
	// Name is the cluster's name in remote_servers, the first argument of its Distributed tables.
	Name string
	// Insert is InsertDistributed or InsertLocal. Default InsertDistributed.
	Insert string
	// Shards lists each shard's replicas (native host:port), in shard_num order.
	Shards [][]string
	// ReplicaBreaker opens a replica's breaker after this many consecutive failures; while open,
	// inserts go to the shard's next replica. Default 1 failure, 5s cool-down.
	ReplicaBreakerFailures int
	ReplicaBreakerCooldown time.Duration
}

// enabled reports whether a cluster is configured.
func (c Cluster) enabled() bool { return len(c.Shards) > 0 }

// Validate reports every problem of the cluster at once, naming the store.clickhouse.cluster key.
func (c Cluster) Validate() error { return errors.Join(c.validate()...) }

func (c Cluster) validate() []error {
	if !c.enabled() {
		if c.Name != "" {
			return []error{errors.New("store.clickhouse.cluster.shards: list the shards of cluster " + c.Name)}
		}
		return nil
	}
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("store.clickhouse.cluster.name: the remote_servers name of the cluster is required with shards"))
	}
	switch c.Insert {
	case "", InsertDistributed, InsertLocal:
	default:
		errs = append(errs, fmt.Errorf("store.clickhouse.cluster.insert: %q is not one of %s, %s", c.Insert, InsertDistributed, InsertLocal))
	}
	seen := map[string]int{}
	for i, sh := range c.Shards {
		if len(sh) == 0 {
			errs = append(errs, fmt.Errorf("store.clickhouse.cluster.shards[%d]: lists no replica", i))
		}
		for _, a := range sh {
			if _, _, err := net.SplitHostPort(a); err != nil {
				errs = append(errs, fmt.Errorf("store.clickhouse.cluster.shards[%d]: replica %q is not host:port", i, a))
			}
			if j, dup := seen[a]; dup {
				errs = append(errs, fmt.Errorf("store.clickhouse.cluster.shards[%d]: replica %s is already in shard %d", i, a, j))
			}
			seen[a] = i
		}
	}
	if c.ReplicaBreakerFailures < 0 || c.ReplicaBreakerCooldown < 0 {
		errs = append(errs, errors.New("clickhousestore: Cluster.ReplicaBreaker* must not be negative"))
	}
	return errs
}

// Endpoint is where a ClickHouse server is and how to log in.
type Endpoint struct {
	// Addr lists native-protocol host:port addresses, tried in order (store.clickhouse.addrs).
	// Default 127.0.0.1:9000.
	Addr []string
	// HTTPAddr lists HTTP-interface host:port addresses (store.clickhouse.http_addrs), tried
	// in order. When set, RowBinary batches are inserted over HTTP as they are; when empty they
	// are converted for the native protocol, which costs a decode of every value (ADR 0013).
	HTTPAddr []string
	// Username to log in as (store.clickhouse.user). Default DefaultUsername.
	Username string
	// PasswordFile is a file holding the password, trailing newline ignored
	// (store.clickhouse.password_file). Empty: none.
	PasswordFile string
	// TLS enables TLS to the server (store.clickhouse.tls; ServerName has no key).
	TLS TLSConfig
}

// TLSConfig configures TLS to the server.
type TLSConfig struct {
	// Enabled turns TLS on.
	Enabled bool
	// CAFile is a PEM bundle to verify the server with; empty uses the system roots.
	CAFile string
	// CertFile and KeyFile are a client certificate, both or neither.
	CertFile string
	KeyFile  string
	// ServerName overrides the name verified in the server certificate.
	ServerName string
	// InsecureSkipVerify disables verification (tests only).
	InsecureSkipVerify bool
}

// withDefaults returns c with zero fields set to their documented defaults.
func (c Config) withDefaults() Config {
	if len(c.Addr) == 0 {
		c.Addr = []string{"127.0.0.1:9000"}
		if c.Cluster.enabled() {
			// Queries, schema reads and DDL go to any node, the first that answers.
			c.Addr = slices.Concat(c.Cluster.Shards...)
		}
	}
	if c.Username == "" {
		c.Username = DefaultUsername
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = 5 * time.Minute
	}
	if c.MaxOpenConns == 0 {
		c.MaxOpenConns = DefaultMaxOpenConns
	}
	if c.MaxIdleConns == 0 {
		c.MaxIdleConns = 5
	}
	if c.ConnMaxLifetime == 0 {
		c.ConnMaxLifetime = time.Hour
	}
	if c.Compression == "" {
		c.Compression = "lz4"
	}
	if c.Cluster.enabled() {
		if c.Cluster.Insert == "" {
			c.Cluster.Insert = InsertDistributed
		}
		if c.Cluster.ReplicaBreakerFailures == 0 {
			c.Cluster.ReplicaBreakerFailures = 1
		}
		if c.Cluster.ReplicaBreakerCooldown == 0 {
			c.Cluster.ReplicaBreakerCooldown = 5 * time.Second
		}
	}
	return c
}

// Validate reports every problem of the configuration at once, naming the key.
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, c.Endpoint.validate("store.clickhouse.addrs", "store.clickhouse.tls")...)
	for _, a := range c.HTTPAddr {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("store.clickhouse.http_addrs: %q is not host:port", a))
		}
	}
	errs = append(errs, c.Cluster.validate()...)
	for name, e := range c.Tenants {
		if name == "" {
			errs = append(errs, errors.New("clickhousestore: Tenants has an empty tenant name"))
		}
		key := fmt.Sprintf("clickhousestore: Tenants[%q]", name)
		errs = append(errs, e.validate(key+".Addr", key+".TLS")...)
	}
	if c.DialTimeout < 0 {
		errs = append(errs, errors.New("store.clickhouse.dial_timeout: must not be negative"))
	}
	if c.MaxOpenConns < 0 {
		errs = append(errs, errors.New("store.clickhouse.max_open_conns: must not be negative"))
	}
	// The fields below have no config key: only code sets them, so the messages name the field.
	if c.ReadTimeout < 0 {
		errs = append(errs, errors.New("clickhousestore: ReadTimeout must not be negative"))
	}
	if c.MaxIdleConns < 0 {
		errs = append(errs, errors.New("clickhousestore: MaxIdleConns must not be negative"))
	}
	if c.MaxOpenConns > 0 && c.MaxIdleConns > c.MaxOpenConns {
		errs = append(errs, fmt.Errorf("clickhousestore: MaxIdleConns %d must not exceed store.clickhouse.max_open_conns %d", c.MaxIdleConns, c.MaxOpenConns))
	}
	switch c.Compression {
	case "", "none", "lz4", "zstd":
	default:
		errs = append(errs, fmt.Errorf("clickhousestore: Compression %q is not one of none, lz4, zstd", c.Compression))
	}
	return errors.Join(errs...)
}

// validate names the endpoint's addresses addrKey and its TLS block tlsKey.
func (e Endpoint) validate(addrKey, tlsKey string) []error {
	var errs []error
	for _, a := range e.Addr {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not host:port", addrKey, a))
		}
	}
	if (e.TLS.CertFile == "") != (e.TLS.KeyFile == "") {
		errs = append(errs, fmt.Errorf("%s: cert_file and key_file must be given together", tlsKey))
	}
	if !e.TLS.Enabled && (e.TLS.CAFile != "" || e.TLS.CertFile != "") {
		errs = append(errs, fmt.Errorf("%s: files given but enabled is false", tlsKey))
	}
	return errs
}
