package bench

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Body formats of gateway requests.
const (
	FormatJSON   = "json"
	FormatNDJSON = "ndjson"
)

// Direct target kinds.
const (
	DirectHTTP   = "clickhouse-http"
	DirectNative = "native"
)

// Gateway interfaces a run drives with the same rows.
const (
	// InterfaceIngest is POST /v1/ingest/{table}, the gateway's own API (phase "gateway").
	InterfaceIngest = "ingest"
	// InterfaceClickHouse is the gateway's ClickHouse HTTP interface, POST
	// /?query=INSERT INTO table FORMAT JSONEachRow with the NDJSON body (phase
	// "gateway clickhouse").
	InterfaceClickHouse = "clickhouse"
)

// ParseInterfaces parses a comma-separated list of gateway interfaces.
func ParseInterfaces(s string) ([]string, error) {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part != InterfaceIngest && part != InterfaceClickHouse {
			return nil, fmt.Errorf("interface %q: want ingest or clickhouse", part)
		}
		if slices.Contains(out, part) {
			return nil, fmt.Errorf("interface %q named twice", part)
		}
		out = append(out, part)
	}
	return out, nil
}

// Direct names a ClickHouse server that receives the same batches without the gateway.
type Direct struct {
	// Kind is DirectHTTP (INSERT … FORMAT JSONEachRow over HTTP, one insert per request) or
	// DirectNative (a clickhouse-go batch with an explicit column list, one per request).
	Kind string
	// Addr is the server's host:port for that protocol.
	Addr string
}

// ParseDirect parses "clickhouse-http=HOST:PORT" or "native=HOST:PORT".
func ParseDirect(s string) (Direct, error) {
	kind, addr, ok := strings.Cut(s, "=")
	if !ok || (kind != DirectHTTP && kind != DirectNative) || addr == "" {
		return Direct{}, fmt.Errorf("direct %q: want clickhouse-http=HOST:PORT or native=HOST:PORT", s)
	}
	return Direct{Kind: kind, Addr: addr}, nil
}

// Config is one benchmark run.
type Config struct {
	// URL is the gateway's base URL, e.g. http://127.0.0.1:8080. Empty runs only the direct targets.
	URL string
	// Table is the gateway table; direct targets use Table_direct_http and Table_direct_native.
	Table string
	// Database is the ClickHouse database of the gateway's tenant (for counting and parts through
	// ClickHouseHTTP) and of the direct tables. Default "default".
	Database string
	// Create creates the standard table (and the direct tables) when missing; the gateway's
	// table through POST /v1/ops/sql as the operator, with OperatorKey.
	Create bool
	// OperatorKey is the gateway's operator key, sent by Create; never written to the report.
	OperatorKey string `json:"-"`
	// Clients is the number of concurrent clients. Default 8.
	Clients int
	// Rows is the number of rows per request. Default 1.
	Rows int
	// Duration bounds the load phase of each target. Default 10s.
	Duration time.Duration
	// Requests, when positive, also bounds each load phase by the number of requests sent.
	Requests int
	// Rate, when positive, limits the total rows/s of all clients together.
	Rate float64
	// Format is the gateway body format, FormatJSON (an array) or FormatNDJSON. Default ndjson.
	// Direct HTTP inserts always send NDJSON (JSONEachRow).
	Format string
	// Gzip compresses every body (before the clock starts).
	Gzip bool
	// WaitCommitted adds ?wait=committed to gateway requests.
	WaitCommitted bool
	// IdempotencyKeys runs the gateway phase a second time ("gateway keyed"), right after the
	// first, with a new Idempotency-Key on every request: keyed against unkeyed in one run.
	IdempotencyKeys bool
	// ClickHouseHTTP is a ClickHouse HTTP host:port used to count rows and parts directly; without it
	// the gateway's POST /v1/query counts rows and parts are not reported.
	ClickHouseHTTP string
	// Interfaces are the gateway interfaces driven with the same batches, one phase each in this
	// order (InterfaceIngest, InterfaceClickHouse). Default: ingest only.
	Interfaces []string
	// Rounds repeats the gateway's phases this many times, so that interfaces measured on a
	// shared, noisy machine alternate instead of one running first: odd rounds run Interfaces
	// in order, even rounds in reverse (ABBA), so each runs as often first as second.
	// Default 1.
	Rounds int
	// Direct lists servers that receive the same batches straight, after the gateway phase.
	Direct []Direct
	// Settle bounds the wait for accepted rows to become queryable. Default 60s.
	Settle time.Duration
	// Bodies is the number of distinct pre-generated bodies cycled through. Default 64.
	Bodies int
	// MaxErrorRatio is the share of failed requests (a transport error or a non-2xx answer) a
	// phase may have and still pass. Default 0: any failed request fails the run.
	MaxErrorRatio float64
	// OpsURL is the gateway's ops listener base URL; the gateway's resident memory is read from
	// its /metrics at the end of the run. Empty skips it.
	OpsURL string
	// Progress, when set, receives one line per second during each load phase.
	Progress io.Writer `json:"-"`
}

func (c *Config) withDefaults() {
	if c.Database == "" {
		c.Database = "default"
	}
	if c.Clients == 0 {
		c.Clients = 8
	}
	if c.Rows == 0 {
		c.Rows = 1
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.Format == "" {
		c.Format = FormatNDJSON
	}
	if c.Settle == 0 {
		c.Settle = 60 * time.Second
	}
	if c.Bodies == 0 {
		c.Bodies = 64
	}
	if len(c.Interfaces) == 0 {
		c.Interfaces = []string{InterfaceIngest}
	}
	if c.Rounds == 0 {
		c.Rounds = 1
	}
}

// Validate reports every problem of the configuration (after defaults) at once.
func (c Config) Validate() error {
	c.withDefaults()
	var errs []error
	if c.URL == "" && len(c.Direct) == 0 {
		errs = append(errs, errors.New("url: give the gateway URL or at least one direct target"))
	}
	if c.URL != "" {
		if err := loopbackURL(c.URL); err != nil {
			errs = append(errs, fmt.Errorf("url: %w", err))
		}
	}
	if !validIdent(c.Table) {
		errs = append(errs, fmt.Errorf("table: %q must be a plain identifier [A-Za-z0-9_]", c.Table))
	}
	if !validIdent(c.Database) {
		errs = append(errs, fmt.Errorf("database: %q must be a plain identifier [A-Za-z0-9_]", c.Database))
	}
	if c.Clients < 1 || c.Clients > 4096 {
		errs = append(errs, fmt.Errorf("clients: %d must be 1..4096", c.Clients))
	}
	if c.Rows < 1 || c.Rows > 1_000_000 {
		errs = append(errs, fmt.Errorf("rows: %d must be 1..1000000", c.Rows))
	}
	if c.Duration < 0 || c.Duration > time.Hour {
		errs = append(errs, fmt.Errorf("duration: %s must be positive and at most 1h", c.Duration))
	}
	if c.Requests < 0 {
		errs = append(errs, fmt.Errorf("requests: %d must not be negative", c.Requests))
	}
	if c.Rate < 0 {
		errs = append(errs, fmt.Errorf("rate: %g must not be negative", c.Rate))
	}
	if c.Format != FormatJSON && c.Format != FormatNDJSON {
		errs = append(errs, fmt.Errorf("format: %q must be json or ndjson", c.Format))
	}
	for _, i := range c.Interfaces {
		if i != InterfaceIngest && i != InterfaceClickHouse {
			errs = append(errs, fmt.Errorf("interface: %q must be ingest or clickhouse", i))
		}
	}
	if slices.Contains(c.Interfaces, InterfaceClickHouse) {
		if c.Format != FormatNDJSON {
			errs = append(errs, fmt.Errorf("format: %q: the clickhouse interface sends JSONEachRow, so the rows must be ndjson", c.Format))
		}
		if c.WaitCommitted {
			errs = append(errs, errors.New("wait-committed: not supported with the clickhouse interface"))
		}
	}
	if c.Rounds < 1 || c.Rounds > 100 {
		errs = append(errs, fmt.Errorf("rounds: %d must be 1..100", c.Rounds))
	}
	if c.ClickHouseHTTP != "" {
		if err := loopback(c.ClickHouseHTTP); err != nil {
			errs = append(errs, fmt.Errorf("clickhouse-http: %w", err))
		}
	}
	for _, d := range c.Direct {
		if err := loopback(d.Addr); err != nil {
			errs = append(errs, fmt.Errorf("direct %s: %w", d.Kind, err))
		}
	}
	if c.Settle < 0 || c.Settle > time.Hour {
		errs = append(errs, fmt.Errorf("settle: %s must be positive and at most 1h", c.Settle))
	}
	if c.MaxErrorRatio < 0 || c.MaxErrorRatio > 1 {
		errs = append(errs, fmt.Errorf("max-error-ratio: %g must be 0..1", c.MaxErrorRatio))
	}
	if c.OpsURL != "" {
		if err := loopbackURL(c.OpsURL); err != nil {
			errs = append(errs, fmt.Errorf("ops-url: %w", err))
		}
	}
	if c.Bodies < 1 || c.Bodies > 100_000 {
		errs = append(errs, fmt.Errorf("bodies: %d must be 1..100000", c.Bodies))
	}
	return errors.Join(errs...)
}

func validIdent(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// loopbackURL accepts an http:// base URL on a loopback host.
func loopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("%q is not an http:// base URL", raw)
	}
	return loopback(u.Host)
}

// loopback accepts only loopback hosts: the tool is a local benchmark, never a load generator
// pointed at someone else's server.
func loopback(hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%q is not a loopback address (127.0.0.0/8, ::1, localhost)", hostport)
}
