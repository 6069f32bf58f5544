package localcache

import (
	"errors"
	"fmt"
	"time"
)

// Config configures the in-process cache. internal/app fills MaxBytes from cache.local.max_bytes;
// the other fields have no config key.
type Config struct {
	// MaxBytes bounds the memory held by results, counting key, value and bookkeeping.
	// Least recently used entries are evicted beyond it. Default 256 MiB.
	MaxBytes int64
	// MaxValueBytes is the largest result stored; larger ones are refused with
	// cache.ErrTooLarge. Default 1 MiB, never more than MaxBytes.
	MaxValueBytes int
	// DefaultTTL is the time to live of a result set with ttl <= 0. Default 60s.
	DefaultTTL time.Duration
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
		errs = append(errs, fmt.Errorf("localcache: MaxValueBytes must be positive, got %d", c.MaxValueBytes))
	}
	if c.MaxBytes > 0 && int64(c.MaxValueBytes) > c.MaxBytes {
		errs = append(errs, fmt.Errorf("cache.local.max_bytes: %[2]d is below the largest cached value (%[1]d bytes); raise it", c.MaxValueBytes, c.MaxBytes))
	}
	if c.DefaultTTL < 0 {
		errs = append(errs, fmt.Errorf("localcache: DefaultTTL must be positive, got %s", c.DefaultTTL))
	}
	return errors.Join(errs...)
}

// Deps are the collaborators of the cache.
type Deps struct {
	// Now returns the current time; nil means time.Now. Tests inject a fake clock.
	Now func() time.Time
}
