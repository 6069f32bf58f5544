package localcoord

import (
	"errors"
	"fmt"
	"time"

	"github.com/wavehouse/wavehouse/internal/coord"
)

// Config configures the in-process coordinator (coord.backend: local).
type Config struct {
	// Lease is how long a lease abandoned by its holder without resigning
	// stays taken before another coordinator may acquire it (coord.lease). In one process
	// a holder only abandons a lease through Abandon (a crash stand-in), so
	// this mostly matters for tests. Default coord.DefaultLease.
	Lease time.Duration
}

// Validate reports every problem in the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Lease < 0 {
		errs = append(errs, fmt.Errorf("coord.lease: must not be negative, got %s", c.Lease))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Lease == 0 {
		c.Lease = coord.DefaultLease
	}
	return c
}
