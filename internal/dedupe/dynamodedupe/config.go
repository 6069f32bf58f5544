package dynamodedupe

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"time"

	"github.com/wavehouse/wavehouse/internal/breaker"
	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultTimeout         = 3 * time.Second
	DefaultMaxAttempts     = 3
	DefaultBreakerFailures = 5
	DefaultBreakerCooldown = 5 * time.Second
)

// maxBackoff caps the SDK retryer's delay between attempts, so MaxAttempts attempts fit well
// within one Timeout.
const maxBackoff = 250 * time.Millisecond

var tableName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// Config configures the DynamoDB dedupe store. internal/app fills it from the boot config's
// dedupe.dynamodb block; Timeout, MaxAttempts and the breaker fields have no config key.
type Config struct {
	// Table is the DynamoDB table holding the records: partition key "pk" of type S, no sort
	// key. Required.
	Table string
	// Region is the AWS region. Empty means the default chain (AWS_REGION, shared config);
	// with a custom Endpoint and no region found, "us-east-1".
	Region string
	// Endpoint overrides the DynamoDB endpoint URL, for dynalite or DynamoDB Local (for
	// example http://127.0.0.1:8000). Empty means the region's AWS endpoint.
	Endpoint string
	// CreateTable makes EnsureTable create the table when it does not exist. It is allowed only
	// with a custom Endpoint: production tables are provisioned by the operator. Default false.
	CreateTable bool
	// AccessKeyIDFile and SecretAccessKeyFile name files holding static credentials. Both or
	// neither; neither means the default credential chain (environment, shared files, IAM
	// role).
	AccessKeyIDFile     string
	SecretAccessKeyFile string
	// Timeout bounds each store call including its retries. Default 3s.
	Timeout time.Duration
	// MaxAttempts is how many times the SDK tries one request (1 means no retry). Default 3.
	MaxAttempts int
	// BreakerFailures is how many consecutive failed calls open the breaker, after which calls
	// fail at once with dedupe.ErrUnavailable for BreakerCooldown. Default 5.
	BreakerFailures int
	// BreakerCooldown is how long an open breaker rejects calls before letting one through to
	// probe the backend. Default 5s.
	BreakerCooldown time.Duration
}

// Validate reports every problem in c at once. It has no side effects.
func (c Config) Validate() error {
	var errs []error
	if !tableName.MatchString(c.Table) {
		errs = append(errs, fmt.Errorf("dedupe.dynamodb.table: %q is not a DynamoDB table name (3-255 of a-z A-Z 0-9 _ . -)", c.Table))
	}
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("dedupe.dynamodb.endpoint: %q is not an http(s) URL", c.Endpoint))
		}
	}
	if c.CreateTable && c.Endpoint == "" {
		errs = append(errs, errors.New("dedupe.dynamodb.create_table: allowed only with dedupe.dynamodb.endpoint set; create the AWS table with your provisioning tool (partition key pk, type S)"))
	}
	if (c.AccessKeyIDFile == "") != (c.SecretAccessKeyFile == "") {
		errs = append(errs, errors.New("dedupe.dynamodb.access_key_id_file, secret_access_key_file: set both or neither"))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("dynamodedupe: Timeout %v is negative", c.Timeout))
	}
	if c.MaxAttempts < 0 || c.MaxAttempts > 10 {
		errs = append(errs, fmt.Errorf("dynamodedupe: MaxAttempts %d is outside 0..10", c.MaxAttempts))
	}
	if c.BreakerFailures < 0 {
		errs = append(errs, fmt.Errorf("dynamodedupe: BreakerFailures %d is negative", c.BreakerFailures))
	}
	if c.BreakerCooldown < 0 {
		errs = append(errs, fmt.Errorf("dynamodedupe: BreakerCooldown %v is negative", c.BreakerCooldown))
	}
	return errors.Join(errs...)
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.BreakerFailures == 0 {
		c.BreakerFailures = DefaultBreakerFailures
	}
	if c.BreakerCooldown == 0 {
		c.BreakerCooldown = DefaultBreakerCooldown
	}
	return c
}

// Deps holds the store's collaborators.
type Deps struct {
	// Clock supplies "now" for the expiry conditions and the breaker. Nil means
	// dedupe.SystemClock.
	Clock dedupe.Clock
	// Logger receives breaker state changes. Nil discards them.
	Logger *slog.Logger
	// Breakers exports the breaker's state
	// (wavehouse_breaker_state{component="dynamodb",target=<table>}); nil exports nothing.
	Breakers *breaker.Metrics
}
