// Package clickhousestore is the store backend for a ClickHouse server, over the native
// protocol with clickhouse-go/v2 (store.backend: clickhouse). It keeps one connection pool per
// tenant target, opened on first use, and detects the server version at connect to choose
// between native {name:Type} parameters and client-side binding. It works with ClickHouse 18.16
// and with current releases.
package clickhousestore

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

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/wavehouse/wavehouse/internal/breaker"
	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
)

// Deps are the collaborators of the store.
type Deps struct {
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
	// Breakers exports the state of the cluster's replica breakers; nil exports nothing.
	Breakers *breaker.Metrics
}

// Store is a store.Store backed by ClickHouse servers.
type Store struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	pools  map[string]*slot
	closed bool

	types    sync.Map // type text → *chtype.Type
	decoders decoderPool

	// cluster is the default endpoint's shards and replicas; nil for a single server.
	cluster *cluster
	// rowKeys reads the sharding-key values of a batch's rows (canonicalRowKeys).
	rowKeys rowKeys
}

var (
	_ store.Store              = (*Store)(nil)
	_ store.CapabilityReporter = (*Store)(nil)
)

// slot holds a target's pool once opened; its lock serialises opening.
type slot struct {
	mu sync.Mutex
	p  *pool
}

// pool is the connection pool of one tenant target.
type pool struct {
	conn driver.Conn
	// nativeParams is true when the server binds {name:Type} itself (revision ≥ 54459).
	nativeParams bool
	// stringSettings is true when query settings travel as strings (revision > 54429), so
	// string settings such as result_overflow_mode can go with a query; 18.16 takes integers only.
	stringSettings bool
	// version is the server's major.minor.
	major, minor uint64
	// http inserts RowBinary batches; nil when the endpoint names no HTTP address.
	http *httpInserter
}

// New validates cfg and returns a store. It connects to nothing until the first call.
func New(cfg Config, deps Deps) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{cfg: cfg.withDefaults(), log: log, pools: map[string]*slot{}, rowKeys: canonicalRowKeys}
	if s.cfg.Cluster.enabled() {
		c, err := newCluster(s.cfg.Cluster, deps)
		if err != nil {
			return nil, err
		}
		s.cluster = c
	}
	return s, nil
}

// endpoint returns the server settings of tenant, falling back to the default endpoint.
func (s *Store) endpoint(tenant string) Endpoint {
	e, ok := s.cfg.Tenants[tenant]
	if !ok {
		return s.cfg.Endpoint
	}
	if len(e.Addr) == 0 {
		e.Addr = s.cfg.Addr
		if len(e.HTTPAddr) == 0 {
			e.HTTPAddr = s.cfg.HTTPAddr
		}
	}
	if e.Username == "" {
		e.Username = s.cfg.Username
	}
	return e
}

// poolKey names the pool of a target: tenants on the default endpoint share the endpoint, but
// each database has its own pool because the native protocol fixes the current database (where
// unqualified table names resolve) per connection.
func (s *Store) poolKey(target store.Target) string {
	if _, ok := s.cfg.Tenants[target.Tenant]; ok {
		return "t:" + target.Tenant + "\x00" + target.Database
	}
	return "\x00" + target.Database
}

// pool returns the target's pool, opening it (and detecting the server version) on first use.
// Concurrent first calls for one target open one pool; an unreachable server for one target
// does not hold up the others. A failed open is not remembered, so the next call dials again.
func (s *Store) pool(ctx context.Context, target store.Target) (*pool, error) {
	if target.Database == "" {
		return nil, fmt.Errorf("%w: target has no database", store.ErrRejected)
	}
	return s.poolFor(ctx, s.poolKey(target), s.endpoint(target.Tenant), target.Database)
}

// poolFor returns the pool named key, opening it on e with database as the current database.
func (s *Store) poolFor(ctx context.Context, key string, e Endpoint, database string) (*pool, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, store.ErrClosed
	}
	sl, ok := s.pools[key]
	if !ok {
		sl = &slot{}
		s.pools[key] = sl
	}
	s.mu.Unlock()

	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.p != nil {
		return sl.p, nil
	}
	p, err := s.open(ctx, e, database)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		_ = p.conn.Close()
		return nil, store.ErrClosed
	}
	sl.p = p
	return p, nil
}

func (s *Store) open(ctx context.Context, e Endpoint, database string) (*pool, error) {
	opts := &clickhouse.Options{
		Addr:            e.Addr,
		Auth:            clickhouse.Auth{Database: database, Username: e.Username},
		DialTimeout:     s.cfg.DialTimeout,
		ReadTimeout:     s.cfg.ReadTimeout,
		MaxOpenConns:    s.cfg.MaxOpenConns,
		MaxIdleConns:    s.cfg.MaxIdleConns,
		ConnMaxLifetime: s.cfg.ConnMaxLifetime,
		Settings:        clickhouse.Settings{},
	}
	for k, v := range s.cfg.Settings {
		opts.Settings[k] = v
	}
	switch s.cfg.Compression {
	case "lz4":
		opts.Compression = &clickhouse.Compression{Method: clickhouse.CompressionLZ4}
	case "zstd":
		opts.Compression = &clickhouse.Compression{Method: clickhouse.CompressionZSTD}
	}
	if e.PasswordFile != "" {
		b, err := os.ReadFile(e.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("store: read password_file: %w", err)
		}
		opts.Auth.Password = strings.TrimRight(string(b), "\r\n")
	}
	if e.TLS.Enabled {
		tc, err := tlsConfig(e.TLS)
		if err != nil {
			return nil, err
		}
		opts.TLS = tc
	}
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return nil, translate(err, store.OpQuery)
	}
	if err := conn.Ping(ctx); err != nil {
		_ = conn.Close()
		return nil, translate(err, store.OpQuery)
	}
	v, err := conn.ServerVersion()
	if err != nil {
		_ = conn.Close()
		return nil, translate(err, store.OpQuery)
	}
	p := &pool{conn: conn, nativeParams: v.Revision >= 54459, stringSettings: v.Revision > 54429, major: v.Version.Major, minor: v.Version.Minor}
	if len(e.HTTPAddr) > 0 {
		p.http = newHTTPInserter(e, opts.Auth.Password, database, opts.TLS, s.cfg)
	}
	s.log.Info("clickhouse connected", "addr", e.Addr, "version", v.Version.String(), "revision", v.Revision,
		"native_parameters", p.nativeParams)
	if !p.dedupTokenSupported() {
		s.log.Warn("this ClickHouse server has no insert_deduplication_token (added in 22.2): a batch in doubt after a crash "+
			"between its insert and its acknowledgement is inserted again, so inserts into MergeTree tables are at least once, not exactly once; "+
			"counted in wavehouse_ingest_in_doubt_batches_total{outcome=\"reinserted_not_deduplicated\"}; "+
			"Replicated* tables drop the identical re-insert by block checksum (exactly once)",
			"addr", e.Addr, "version", v.Version.String())
	}
	return p, nil
}

func tlsConfig(c TLSConfig) (*tls.Config, error) {
	tc := &tls.Config{ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify, MinVersion: tls.VersionTLS12} //nolint:gosec // opt-in for tests
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("store: read tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("store: tls.ca_file holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("store: load tls client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// parseType parses a column type text once per distinct text.
func (s *Store) parseType(name string) *chtype.Type {
	if t, ok := s.types.Load(name); ok {
		return t.(*chtype.Type)
	}
	t, err := chtype.Parse(name)
	if err != nil {
		t = &chtype.Type{Kind: chtype.Unsupported, Name: name}
	}
	s.types.Store(name, t)
	return t
}

// Ping checks that the target's server answers.
func (s *Store) Ping(ctx context.Context, target store.Target) error {
	p, err := s.pool(ctx, target)
	if err != nil {
		return err
	}
	return translate(p.conn.Ping(ctx), store.OpQuery)
}

// Capabilities reports what the target's server supports, from its version.
func (s *Store) Capabilities(ctx context.Context, target store.Target) (store.Capabilities, error) {
	p, err := s.pool(ctx, target)
	if err != nil {
		return store.Capabilities{}, err
	}
	modern := p.major > 22 || p.major == 22 && p.minor >= 3
	return store.Capabilities{ModernTypes: modern, NativeParameters: p.nativeParams, InsertDedupToken: p.dedupTokenSupported()}, nil
}

// Close closes every pool. It is idempotent.
func (s *Store) Close(context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	pools := s.pools
	s.pools = nil
	s.mu.Unlock()
	// A pool still being opened sees closed when it finishes and closes itself.
	var errs []error
	for _, sl := range pools {
		sl.mu.Lock()
		if sl.p != nil {
			if sl.p.http != nil {
				sl.p.http.close()
			}
			errs = append(errs, sl.p.conn.Close())
			sl.p = nil
		}
		sl.mu.Unlock()
	}
	return errors.Join(errs...)
}
