package localcache

import (
	"errors"
	"fmt"
	"time"
)

// Config configures the in-process cache (cache.local in the boot config).
type Config struct {
	// MaxBytes bounds the memory held by results, counting key, value and bookkeeping.
	// Least recently used entries are evicted beyond it. Default 256 MiB.
	MaxBytes int64 `yaml:"max_bytes"`
	// MaxValueBytes is the largest result stored; larger ones are refused with
	// cache.ErrTooLarge. Default 1 MiB, never more than MaxBytes.
	MaxValueBytes int `yaml:"max_value_bytes"`
	// DefaultTTL is the time to live of a result set with ttl <= 0. Default 60s.
	DefaultTTL time.Duration `yaml:"default_ttl"`
}

// Defaults used for zero fields.
const (
	DefaultMaxBytes      = 256 << 20
	DefaultMaxValueBytes = 1 << 20
	DefaultTTL           = 60 * time.Second
)

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxValueBytes == 0 {
		c.MaxValueBytes = DefaultMaxValueBytes
	}
	if c.DefaultTTL == 0 {
		c.DefaultTTL = DefaultTTL
	}
	return c
}

// Validate reports every invalid field, naming its key.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("cache.local.max_bytes: must be positive, got %d", c.MaxBytes))
	}
	if c.MaxValueBytes < 0 {
		errs = append(errs, fmt.Errorf("cache.local.max_value_bytes: must be positive, got %d", c.MaxValueBytes))
	}
	if c.MaxBytes > 0 && int64(c.MaxValueBytes) > c.MaxBytes {
		errs = append(errs, fmt.Errorf("cache.local.max_value_bytes: %d exceeds cache.local.max_bytes %d; lower it or raise max_bytes", c.MaxValueBytes, c.MaxBytes))
	}
	if c.DefaultTTL < 0 {
		errs = append(errs, fmt.Errorf("cache.local.default_ttl: must be positive, got %s", c.DefaultTTL))
	}
	return errors.Join(errs...)
}

// Deps are the collaborators of the cache.
type Deps struct {
	// Now returns the current time; nil means time.Now. Tests inject a fake clock.
	Now func() time.Time
}
