package writer

import (
	"errors"
	"fmt"
	"time"
)

// Config tunes batching and retries. The defaults make few large parts: a table's rows are
// flushed when 10,000 rows or 16 MiB are buffered, or 1 s after the first one arrived.
type Config struct {
	// MaxRows flushes a table once this many rows are buffered; the batch then takes everything
	// buffered, up to MaxBytes and max(MaxRows, 1,048,576) rows.
	MaxRows int
	// MaxBytes flushes a table once this many payload bytes are buffered.
	MaxBytes int
	// MaxWait flushes a table this long after its oldest buffered row arrived.
	MaxWait time.Duration
	// FetchBatch is how many frames one pull asks for.
	FetchBatch int
	// FetchWait is how long one pull waits for the first frame.
	FetchWait time.Duration
	// InsertTimeout bounds one insert statement.
	InsertTimeout time.Duration
	// BackoffMin and BackoffMax bound the redelivery delay after a transient failure; it doubles
	// with every attempt of a frame, with ±20% jitter.
	BackoffMin, BackoffMax time.Duration
	// BreakerFailures consecutive transient failures of one store target open its breaker:
	// flushes to it are not attempted for BreakerCooldown, then one probe flush decides.
	BreakerFailures int
	BreakerCooldown time.Duration
	// ProgressInterval is how often every frame the writer holds is reported in progress to the
	// queue, so it is not redelivered while it waits for its insert; it must be well below the
	// queue's ack wait (app sets a third of mq.ack_wait). Zero disables it.
	ProgressInterval time.Duration
	// MaxBuffered bounds the payload bytes held per partition (buffered or being inserted):
	// the partition is not pulled while it holds this much (one pull can take it past). Zero
	// means MaxBytes / 2: a table's frames come from one partition, so about half a batch is
	// held per table; 4 × MaxBytes held no faster inserts and four times the heap (ADR 0018).
	MaxBuffered int
	// ForgetDelay is how long a batch plan is kept after its frames were acknowledged (see
	// forget.go); zero forgets at once.
	ForgetDelay time.Duration
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		MaxRows:         10_000,
		MaxBytes:        16 << 20,
		MaxWait:         time.Second,
		FetchBatch:      256,
		FetchWait:       500 * time.Millisecond,
		InsertTimeout:   60 * time.Second,
		BackoffMin:      250 * time.Millisecond,
		BackoffMax:      30 * time.Second,
		BreakerFailures: 3,
		BreakerCooldown: 5 * time.Second,
		// A third of the default mq.ack_wait (30 s).
		ProgressInterval: 10 * time.Second,
		ForgetDelay:      30 * time.Second,
	}
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	pos := func(name string, ok bool) {
		if !ok {
			errs = append(errs, fmt.Errorf("%s: must be positive", name))
		}
	}
	pos("ingest.flush.max_rows", c.MaxRows > 0)
	pos("ingest.flush.max_bytes", c.MaxBytes > 0)
	pos("ingest.flush.max_wait", c.MaxWait > 0)
	// The fields below have no config key: only code sets them, so the messages name the field.
	pos("writer: FetchBatch", c.FetchBatch > 0)
	pos("writer: FetchWait", c.FetchWait > 0)
	pos("writer: InsertTimeout", c.InsertTimeout > 0)
	pos("writer: BackoffMin", c.BackoffMin > 0)
	pos("writer: BreakerFailures", c.BreakerFailures > 0)
	pos("writer: BreakerCooldown", c.BreakerCooldown > 0)
	if c.ProgressInterval < 0 || c.MaxBuffered < 0 || c.ForgetDelay < 0 {
		errs = append(errs, errors.New("writer: ProgressInterval, MaxBuffered and ForgetDelay must not be negative"))
	}
	if c.BackoffMax < c.BackoffMin {
		errs = append(errs, errors.New("writer: BackoffMax must not be below BackoffMin"))
	}
	return errors.Join(errs...)
}
