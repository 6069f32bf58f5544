package clickhousestore

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Config configures the ClickHouse server backend (store.backend: clickhouse).
type Config struct {
	// Endpoint is the default server; tenants without an entry in Tenants use it.
	Endpoint `yaml:",inline"`
	// Tenants overrides the server per tenant (address, credentials, TLS). Optional.
	Tenants map[string]Endpoint `yaml:"tenants"`
	// DialTimeout bounds connecting; an unreachable server fails with store.ErrUnavailable
	// after it. Default 2s.
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// ReadTimeout bounds one read from the server (a query with no block for that long fails
	// with store.ErrTimeout). Default 5m.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// MaxOpenConns is the pool size per tenant target. Default 10.
	MaxOpenConns int `yaml:"max_open_conns"`
	// MaxIdleConns is the number of idle connections kept per target. Default 5.
	MaxIdleConns int `yaml:"max_idle_conns"`
	// ConnMaxLifetime recycles connections. Default 1h.
	ConnMaxLifetime time.Duration `yaml:"conn_max_lifetime"`
	// Compression of native blocks: none, lz4 or zstd. Default lz4.
	Compression string `yaml:"compression"`
	// Settings are integer server settings sent with every query (only integer and boolean
	// settings travel over the native protocol to old servers), e.g.
	// allow_experimental_low_cardinality_type: 1 for LowCardinality DDL on 18.16.
	Settings map[string]int `yaml:"settings"`
}

// Endpoint is where a ClickHouse server is and how to log in.
type Endpoint struct {
	// Addr lists native-protocol host:port addresses (tried in order). Default 127.0.0.1:9000.
	Addr []string `yaml:"addr"`
	// Username to log in as. Default "default".
	Username string `yaml:"username"`
	// PasswordFile is a file holding the password (trailing newline ignored). Empty: none.
	PasswordFile string `yaml:"password_file"`
	// TLS enables TLS to the server.
	TLS TLSConfig `yaml:"tls"`
}

// TLSConfig configures TLS to the server.
type TLSConfig struct {
	// Enabled turns TLS on.
	Enabled bool `yaml:"enabled"`
	// CAFile is a PEM bundle to verify the server with; empty uses the system roots.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a client certificate, both or neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName overrides the name verified in the server certificate.
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify disables verification (tests only).
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// withDefaults returns c with zero fields set to their documented defaults.
func (c Config) withDefaults() Config {
	if len(c.Addr) == 0 {
		c.Addr = []string{"127.0.0.1:9000"}
	}
	if c.Username == "" {
		c.Username = "default"
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 2 * time.Second
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = 5 * time.Minute
	}
	if c.MaxOpenConns == 0 {
		c.MaxOpenConns = 10
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
	return c
}

// Validate reports every problem of the configuration at once, naming the key.
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, c.Endpoint.validate("store.clickhouse")...)
	for name, e := range c.Tenants {
		if name == "" {
			errs = append(errs, errors.New("store.clickhouse.tenants: empty tenant name"))
		}
		errs = append(errs, e.validate("store.clickhouse.tenants."+name)...)
	}
	if c.DialTimeout < 0 {
		errs = append(errs, errors.New("store.clickhouse.dial_timeout: must not be negative"))
	}
	if c.ReadTimeout < 0 {
		errs = append(errs, errors.New("store.clickhouse.read_timeout: must not be negative"))
	}
	if c.MaxOpenConns < 0 || c.MaxIdleConns < 0 {
		errs = append(errs, errors.New("store.clickhouse.max_open_conns/max_idle_conns: must not be negative"))
	}
	if c.MaxOpenConns > 0 && c.MaxIdleConns > c.MaxOpenConns {
		errs = append(errs, errors.New("store.clickhouse.max_idle_conns: must not exceed max_open_conns"))
	}
	switch c.Compression {
	case "", "none", "lz4", "zstd":
	default:
		errs = append(errs, fmt.Errorf("store.clickhouse.compression: %q is not one of none, lz4, zstd", c.Compression))
	}
	return errors.Join(errs...)
}

func (e Endpoint) validate(key string) []error {
	var errs []error
	for _, a := range e.Addr {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("%s.addr: %q is not host:port", key, a))
		}
	}
	if (e.TLS.CertFile == "") != (e.TLS.KeyFile == "") {
		errs = append(errs, fmt.Errorf("%s.tls: cert_file and key_file must be given together", key))
	}
	if !e.TLS.Enabled && (e.TLS.CAFile != "" || e.TLS.CertFile != "") {
		errs = append(errs, fmt.Errorf("%s.tls: files given but tls.enabled is false", key))
	}
	return errs
}
