package stream

import (
	"errors"
	"fmt"
	"time"
)

// Slow-subscriber policies.
const (
	// PolicyGap drops events for a subscriber whose buffer is full and, once
	// it has room again, sends it an `event: gap` naming the missed ids.
	PolicyGap = "gap"
	// PolicyDisconnect ends the response of a subscriber whose buffer is
	// full; its EventSource reconnects with Last-Event-ID and resumes from
	// the queue's history without loss.
	PolicyDisconnect = "disconnect"
)

// Defaults of Config; the boot config's defaults for the stream block are these constants.
const (
	DefaultHeartbeat      = 15 * time.Second
	DefaultRetry          = 2 * time.Second
	DefaultBuffer         = 1024
	DefaultMaxSubscribers = 1000
	DefaultWriteTimeout   = 30 * time.Second
)

// Config configures the live stream; internal/app fills it from the boot config's stream block.
type Config struct {
	// Heartbeat is the period of the SSE comment that keeps proxies from
	// closing an idle stream. Default 15s.
	Heartbeat time.Duration
	// Retry is the reconnection delay suggested to clients with the SSE
	// `retry:` field. Default 2s.
	Retry time.Duration
	// Buffer is the number of events one live subscriber may have queued
	// before the slow-subscriber policy applies. Default 1024.
	Buffer int
	// SlowPolicy is "gap" (default) or "disconnect".
	SlowPolicy string
	// MaxSubscribers bounds the concurrent streams of one tenant in this
	// process; beyond it a request is answered 429. Default 1000; -1
	// unlimited.
	MaxSubscribers int
	// WriteTimeout bounds one write to a client; a client that does not
	// read for that long is disconnected. Default 30s.
	WriteTimeout time.Duration
}

// withDefaults returns c with zero values replaced by defaults.
func (c Config) withDefaults() Config {
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.Retry == 0 {
		c.Retry = DefaultRetry
	}
	if c.Buffer == 0 {
		c.Buffer = DefaultBuffer
	}
	if c.SlowPolicy == "" {
		c.SlowPolicy = PolicyGap
	}
	if c.MaxSubscribers == 0 {
		c.MaxSubscribers = DefaultMaxSubscribers
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	return c
}

// Validate reports every problem of c (after defaults), naming the key.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.Heartbeat < 100*time.Millisecond {
		errs = append(errs, errors.New("stream.heartbeat: must be at least 100ms"))
	}
	if c.Retry < 0 {
		errs = append(errs, errors.New("stream.retry: must not be negative"))
	}
	if c.Buffer < 1 {
		errs = append(errs, errors.New("stream.buffer: must be at least 1"))
	}
	switch c.SlowPolicy {
	case PolicyGap, PolicyDisconnect:
	default:
		errs = append(errs, fmt.Errorf("stream.slow_policy: %q is not one of gap, disconnect", c.SlowPolicy))
	}
	if c.MaxSubscribers < -1 {
		errs = append(errs, errors.New("stream.max_subscribers: must be positive or -1 (unlimited)"))
	}
	if c.WriteTimeout < 0 {
		errs = append(errs, errors.New("stream.write_timeout: must not be negative"))
	}
	return errors.Join(errs...)
}
