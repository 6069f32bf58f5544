package natscoord

import (
	"errors"
	"fmt"
	"time"

	"github.com/wavehouse/wavehouse/internal/coord"
)

// Config configures the NATS KV coordinator. internal/app fills it from the boot config (coord.lease,
// coord.nats.bucket, mq.nats.manage_topology, mq.nats.replicas).
type Config struct {
	// Bucket is the JetStream KV bucket holding the leases, one key per lease name
	// (coord.nats.bucket, whose default is <mq.prefix>_leases). Required.
	Bucket string
	// Manage creates the bucket when it is missing (History 1, file storage, Replicas). When
	// false the bucket must exist already, for operators who provision JetStream assets
	// themselves (mq.nats.manage_topology).
	Manage bool
	// Replicas is the bucket's replication factor when Manage creates it: 1 on a single
	// server, 3 on a cluster (mq.nats.replicas). Default 1.
	Replicas int
	// Lease is how long a lease outlives its holder's last renewal before another coordinator
	// may take it over, measured on the candidate's own clock (coord.lease). Default
	// coord.DefaultLease.
	Lease time.Duration
	// RenewInterval is how often a holder renews. Default Lease/3.
	RenewInterval time.Duration
	// SafetyMargin is how much earlier than Lease a holder that cannot renew steps down; it
	// absorbs clock-rate drift and scheduling delays between holder and candidate. Default
	// Lease/5.
	SafetyMargin time.Duration
}

// Validate reports every problem in the configuration.
func (c Config) Validate() error {
	var errs []error
	if !validBucket(c.Bucket) {
		errs = append(errs, fmt.Errorf("coord.nats.bucket: %q is not a valid KV bucket name (letters, digits, '_' and '-')", c.Bucket))
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("mq.nats.replicas: must be between 1 and 5, got %d", c.Replicas))
	}
	if c.Lease < 0 {
		errs = append(errs, fmt.Errorf("coord.lease: must not be negative, got %s", c.Lease))
	}
	// RenewInterval and SafetyMargin have no config key: only code sets them.
	if c.RenewInterval < 0 {
		errs = append(errs, fmt.Errorf("natscoord: RenewInterval must not be negative, got %s", c.RenewInterval))
	}
	if c.SafetyMargin < 0 {
		errs = append(errs, fmt.Errorf("natscoord: SafetyMargin must not be negative, got %s", c.SafetyMargin))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	d := c.withDefaults()
	if d.SafetyMargin >= d.Lease {
		errs = append(errs, fmt.Errorf("coord.lease: %s must be longer than the safety margin %s", d.Lease, d.SafetyMargin))
	} else if d.RenewInterval >= d.Lease-d.SafetyMargin {
		errs = append(errs, fmt.Errorf("natscoord: RenewInterval %s must be shorter than Lease - SafetyMargin (%s), or a holder steps down between two renewals", d.RenewInterval, d.Lease-d.SafetyMargin))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Lease == 0 {
		c.Lease = coord.DefaultLease
	}
	if c.RenewInterval == 0 {
		c.RenewInterval = c.Lease / 3
	}
	if c.SafetyMargin == 0 {
		c.SafetyMargin = c.Lease / 5
	}
	return c
}

func validBucket(s string) bool {
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-') {
			return false
		}
	}
	return s != ""
}
