// Package rediscache is the Redis cache backend (cache.backend: redis): results and
// version counters in Redis or Valkey, standalone or cluster, shared by every process
// configured with the same server and key prefix.
//
// Every key is "<key_prefix>{<escaped tenant>}:…", so a tenant's keys share one cluster
// hash slot and its versions are read with one MGET. Each operation is bounded by
// timeout; a circuit breaker turns an unreachable server into fast cache.ErrUnavailable
// answers; bumps that cannot be delivered are retried by Run, and until they land the
// lookups they affect report cache.ErrUnavailable so that callers bypass.
package rediscache

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/wavehouse/wavehouse/internal/breaker"
	"github.com/wavehouse/wavehouse/internal/cache"
)

var (
	_ cache.Cache          = (*Cache)(nil)
	_ cache.HealthReporter = (*Cache)(nil)
)

// Cache is the Redis cache. It is safe for concurrent use.
type Cache struct {
	cfg    Config
	client redis.UniversalClient
	br     *breaker.Breaker
	log    *slog.Logger

	closeOnce sync.Once
	closed    chan struct{}

	pmu     sync.Mutex
	pending map[pendingKey]uint64 // undelivered bumps → generation
	gen     uint64
}

// New builds the cache and its client. It neither dials Redis nor starts goroutines,
// so boot never waits for Redis; it reads the password and TLS files.
func New(cfg Config, deps Deps) (*Cache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	password := ""
	if cfg.PasswordFile != "" {
		b, err := os.ReadFile(cfg.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("cache.redis.password_file: %w", err)
		}
		password = strings.TrimRight(string(b), "\r\n")
	}
	tlsCfg, err := buildTLS(cfg.TLS)
	if err != nil {
		return nil, err
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cache{
		cfg:     cfg,
		log:     log,
		closed:  make(chan struct{}),
		pending: make(map[pendingKey]uint64),
	}
	c.br, err = breaker.New(breaker.Config{Failures: cfg.BreakerFailures, Cooldown: cfg.BreakerCooldown}, breaker.Deps{
		Now:       now,
		Metrics:   deps.Breakers,
		Component: "redis",
		Target:    cfg.Addrs[0],
		OnChange: func(from, to breaker.State) {
			c.log.Warn("cache: redis circuit breaker", slog.String("from", from.String()), slog.String("to", to.String()))
		},
	})
	if err != nil {
		return nil, fmt.Errorf("cache.redis: %w", err)
	}
	maint := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	if cfg.Cluster {
		c.client = redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: cfg.Addrs, Username: cfg.Username, Password: password, TLSConfig: tlsCfg,
			DialTimeout: cfg.Timeout, ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout,
			PoolTimeout: cfg.Timeout, PoolSize: cfg.PoolSize, MaxRetries: -1, DialerRetries: 1, MaxRedirects: 3,
			ContextTimeoutEnabled: true, DisableIdentity: true, MaintNotificationsConfig: maint,
		})
	} else {
		c.client = redis.NewClient(&redis.Options{
			Addr: cfg.Addrs[0], Username: cfg.Username, Password: password, DB: cfg.DB, TLSConfig: tlsCfg,
			DialTimeout: cfg.Timeout, ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout,
			PoolTimeout: cfg.Timeout, PoolSize: cfg.PoolSize, MaxRetries: -1, DialerRetries: 1,
			ContextTimeoutEnabled: true, DisableIdentity: true, MaintNotificationsConfig: maint,
		})
	}
	return c, nil
}

func buildTLS(t TLSConfig) (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // opt-in, documented as testing only
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("cache.redis.tls.ca_file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cache.redis.tls.ca_file: no PEM certificate in %s", t.CAFile)
		}
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("cache.redis.tls.cert_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// do runs op under the breaker and the per-operation timeout, and classifies its error:
// redis.Nil passes through, an error of the caller's context stays recognisable, any
// other error wraps cache.ErrUnavailable.
func (c *Cache) do(ctx context.Context, op func(ctx context.Context) error) error {
	select {
	case <-c.closed:
		return cache.ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	err := c.br.Do(func() (breaker.Outcome, error) {
		octx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		err := op(octx)
		cancel()
		var rerr redis.Error
		switch {
		case err == nil || errors.Is(err, redis.Nil):
			return breaker.Success, err
		case ctx.Err() != nil:
			return breaker.Neutral, fmt.Errorf("cache: %w", ctx.Err())
		case errors.As(err, &rerr) && !isConnError(rerr):
			// The server answered (OOM, WRONGTYPE…): reachable, but this operation failed.
			return breaker.Success, fmt.Errorf("%w: %w", cache.ErrUnavailable, err)
		default:
			return breaker.Failure, fmt.Errorf("%w: %w", cache.ErrUnavailable, err)
		}
	})
	if errors.Is(err, breaker.ErrOpen) {
		return fmt.Errorf("%w: circuit breaker open", cache.ErrUnavailable)
	}
	return err
}

// isConnError reports server replies that mean the node cannot serve now.
func isConnError(err redis.Error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "LOADING") || strings.HasPrefix(msg, "CLUSTERDOWN") ||
		strings.HasPrefix(msg, "MASTERDOWN") || strings.HasPrefix(msg, "TRYAGAIN")
}

// Get returns the value stored under key, or cache.ErrMiss.
func (c *Cache) Get(ctx context.Context, key cache.Key) ([]byte, error) {
	var stored []byte
	err := c.do(ctx, func(ctx context.Context) error {
		var err error
		stored, err = c.client.Get(ctx, c.resultKey(key)).Bytes()
		return err
	})
	if errors.Is(err, redis.Nil) {
		return nil, cache.ErrMiss
	}
	if err != nil {
		return nil, err
	}
	value, err := decode(stored, c.cfg.MaxValueBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", cache.ErrMiss, err)
	}
	return value, nil
}

// Set stores value under key for ttl, compressed above compress_threshold. A value above
// max_value_bytes is not stored and cache.ErrTooLarge is returned.
func (c *Cache) Set(ctx context.Context, key cache.Key, value []byte, ttl time.Duration) error {
	if len(value) > c.cfg.MaxValueBytes {
		select {
		case <-c.closed:
			return cache.ErrClosed
		default:
		}
		return fmt.Errorf("%w: %d bytes, limit %d", cache.ErrTooLarge, len(value), c.cfg.MaxValueBytes)
	}
	if ttl <= 0 {
		ttl = c.cfg.DefaultTTL
	}
	ttl = max(ttl, time.Millisecond) // Redis expiries have millisecond resolution.
	stored := encode(value, c.cfg.CompressThreshold)
	return c.do(ctx, func(ctx context.Context) error {
		return c.client.Set(ctx, c.resultKey(key), stored, ttl).Err()
	})
}

// Health reports the breaker state and the number of undelivered bumps.
func (c *Cache) Health() cache.Health {
	c.pmu.Lock()
	n := len(c.pending)
	c.pmu.Unlock()
	return cache.Health{Breaker: breakerState(c.br.State()), BreakerOpens: c.br.Opens(), PendingInvalidations: n}
}

func breakerState(s breaker.State) cache.BreakerState {
	switch s {
	case breaker.Open:
		return cache.BreakerOpen
	case breaker.HalfOpen:
		return cache.BreakerHalfOpen
	}
	return cache.BreakerClosed
}

// Run retries undelivered bumps every retry_interval until ctx is done or the cache is
// closed. It returns nil on either.
func (c *Cache) Run(ctx context.Context) error {
	tick := time.NewTicker(c.cfg.RetryInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.closed:
			return nil
		case <-tick.C:
			c.flushPending(ctx)
		}
	}
}

// Close closes the client. It is idempotent. Undelivered bumps are dropped: entries
// they would have orphaned expire by their TTL.
func (c *Cache) Close(context.Context) error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		if cerr := c.client.Close(); cerr != nil {
			err = fmt.Errorf("cache: close redis client: %w", cerr)
		}
	})
	return err
}
