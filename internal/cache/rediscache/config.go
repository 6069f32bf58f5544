package rediscache

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/breaker"
)

// Config configures the Redis cache. internal/app fills it from the boot config's cache.redis block;
// PoolSize, DefaultTTL, CompressThreshold, MaxValueBytes, the breaker fields, RetryInterval and
// TLS.ServerName have no config key.
type Config struct {
	// Addrs are the host:port addresses: one for a standalone server, one or more seed
	// nodes for a cluster. Required.
	Addrs []string
	// Cluster selects the Redis Cluster protocol. Default false.
	Cluster bool
	// Username is the ACL user; empty means the default user.
	Username string
	// PasswordFile is a file holding the password (trailing newline ignored); empty means
	// no password.
	PasswordFile string
	// DB is the database number of a standalone server. Default 0; must be 0 with Cluster.
	DB int
	// KeyPrefix starts every key, before the tenant. Default "wh:". It may not contain
	// '{' or '}', which would break cluster hash tags.
	KeyPrefix string
	// TLS configures TLS; disabled by default.
	TLS TLSConfig
	// Timeout bounds each operation, including dialling: a slow cache is bypassed, never
	// waited on. Default 100ms.
	Timeout time.Duration
	// PoolSize is the connection pool size per node. Default 10 per CPU.
	PoolSize int
	// DefaultTTL is the time to live of a result set with ttl <= 0. Default 60s.
	DefaultTTL time.Duration
	// CompressThreshold is the value size from which values are s2-compressed. Default
	// 1 KiB.
	CompressThreshold int
	// MaxValueBytes is the largest result stored, before compression; larger ones are
	// refused with cache.ErrTooLarge. Default 1 MiB.
	MaxValueBytes int
	// BreakerFailures is the number of consecutive failures that opens the circuit
	// breaker. Default 5.
	BreakerFailures int
	// BreakerCooldown is how long the open breaker fails operations fast before it lets
	// one probe through. Default 5s.
	BreakerCooldown time.Duration
	// RetryInterval is how often Run retries invalidations that could not reach Redis.
	// Default 500ms.
	RetryInterval time.Duration
}

// TLSConfig configures TLS to Redis. Files are PEM.
type TLSConfig struct {
	// Enabled turns TLS on. Default false.
	Enabled bool
	// CAFile verifies the server; empty means the system roots.
	CAFile string
	// CertFile and KeyFile are the client certificate for mutual TLS; both or neither.
	CertFile string
	KeyFile  string
	// ServerName overrides the name verified in the server certificate.
	ServerName string
	// InsecureSkipVerify skips verifying the server certificate (testing only).
	InsecureSkipVerify bool
}

// Defaults used for zero fields.
const (
	DefaultKeyPrefix         = "wh:"
	DefaultTimeout           = 100 * time.Millisecond
	DefaultTTL               = 60 * time.Second
	DefaultCompressThreshold = 1 << 10
	DefaultMaxValueBytes     = 1 << 20
	DefaultBreakerFailures   = 5
	DefaultBreakerCooldown   = 5 * time.Second
	DefaultRetryInterval     = 500 * time.Millisecond
)

func (c Config) withDefaults() Config {
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultKeyPrefix
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.DefaultTTL == 0 {
		c.DefaultTTL = DefaultTTL
	}
	if c.CompressThreshold == 0 {
		c.CompressThreshold = DefaultCompressThreshold
	}
	if c.MaxValueBytes == 0 {
		c.MaxValueBytes = DefaultMaxValueBytes
	}
	if c.BreakerFailures == 0 {
		c.BreakerFailures = DefaultBreakerFailures
	}
	if c.BreakerCooldown == 0 {
		c.BreakerCooldown = DefaultBreakerCooldown
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = DefaultRetryInterval
	}
	return c
}

// Validate reports every invalid field, naming its key. It reads no file.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	// bad names a config key; code names a field only code sets.
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("cache.redis.%s: "+format, append([]any{key}, args...)...))
	}
	code := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("rediscache: %s "+format, append([]any{field}, args...)...))
	}
	if len(c.Addrs) == 0 {
		bad("addrs", "required: list the Redis address (host:port), or the cluster seed nodes")
	}
	for i, a := range c.Addrs {
		if !strings.Contains(a, ":") {
			bad("addrs", "entry %d %q is not host:port", i, a)
		}
	}
	if !c.Cluster && len(c.Addrs) > 1 {
		bad("addrs", "%d addresses without cluster: true; give one address or set cache.redis.cluster", len(c.Addrs))
	}
	if c.DB < 0 {
		bad("db", "must be 0 or more, got %d", c.DB)
	}
	if c.Cluster && c.DB != 0 {
		bad("db", "Redis Cluster has only database 0, got %d", c.DB)
	}
	if strings.ContainsAny(c.KeyPrefix, "{}") {
		bad("key_prefix", "%q contains '{' or '}', which breaks cluster hash tags", c.KeyPrefix)
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		bad("tls", "cert_file and key_file go together")
	}
	if !c.TLS.Enabled && (c.TLS.CAFile != "" || c.TLS.CertFile != "" || c.TLS.ServerName != "") {
		bad("tls.enabled", "TLS files are set but cache.redis.tls.enabled is false")
	}
	if c.Timeout < 0 {
		bad("timeout", "must be positive, got %s", c.Timeout)
	}
	for field, d := range map[string]time.Duration{"DefaultTTL": c.DefaultTTL, "BreakerCooldown": c.BreakerCooldown, "RetryInterval": c.RetryInterval} {
		if d < 0 {
			code(field, "must be positive, got %s", d)
		}
	}
	for field, n := range map[string]int{"PoolSize": c.PoolSize, "CompressThreshold": c.CompressThreshold, "MaxValueBytes": c.MaxValueBytes, "BreakerFailures": c.BreakerFailures} {
		if n < 0 {
			code(field, "must be positive, got %d", n)
		}
	}
	return errors.Join(errs...)
}

// Deps are the collaborators of the cache.
type Deps struct {
	// Now returns the current time for the breaker; nil means time.Now.
	Now func() time.Time
	// Logger records breaker transitions; nil discards them.
	Logger *slog.Logger
	// Breakers exports the breaker's state
	// (wavehouse_breaker_state{component="redis",target=<first address>}); nil exports nothing.
	Breakers *breaker.Metrics
}
