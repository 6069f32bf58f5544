// Package breaker is the circuit breaker every WaveHouse client of a remote dependency uses:
// the ingest writer per store target, the Redis cache and the DynamoDB dedupe store.
//
// # Semantics
//
// Closed, every call is admitted and consecutive failures are counted; a success resets the
// count. At Config.Failures consecutive failures the breaker opens: calls are refused with an
// [*OpenError] for Config.Cooldown. After the cool-down it is half-open: exactly one call, the
// trial, is admitted and the others are refused. The trial's success closes the breaker, its
// failure opens it for another cool-down, and a [Neutral] outcome (the caller gave up, or the
// call returned before reaching the dependency) leaves it half-open with the trial slot free
// for the next call.
//
// A call is admitted and its outcome recorded in one step, [Breaker.Do]: the outcome is what
// the function returns, and a function that panics or exits its goroutine counts as Neutral.
// So an admitted trial can never be left unreported, which would hold the breaker half-open
// with no call allowed through (the fault this package was written to remove).
//
// Outcomes of calls admitted before the last state change are ignored: a call that started
// before the breaker opened says nothing about the dependency now.
package breaker

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// State is a breaker state. Its integer value is the one the state metric reports.
type State int

// Breaker states.
const (
	// Closed admits every call.
	Closed State = 0
	// HalfOpen admits one trial call.
	HalfOpen State = 1
	// Open refuses every call until the cool-down ends.
	Open State = 2
)

// String returns "closed", "half_open" or "open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case HalfOpen:
		return "half_open"
	case Open:
		return "open"
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// Outcome is what a call says about the dependency.
type Outcome int

// Outcomes. The zero value is Neutral, so an outcome left unset counts for nothing.
const (
	// Neutral says nothing about the dependency: the caller's context ended, or the call
	// returned before reaching it. A neutral trial frees the trial slot; the state stays.
	Neutral Outcome = iota
	// Success means the dependency answered (even with an error of the request's own).
	Success
	// Failure means the dependency could not be reached or could not serve.
	Failure
)

// ErrOpen is matched (errors.Is) by the error of a refused call.
var ErrOpen = errors.New("breaker: open")

// OpenError is returned by Do for a refused call.
type OpenError struct {
	// RetryIn is how long until the breaker may admit a call again.
	RetryIn time.Duration
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("breaker: open, retry in %s", e.RetryIn)
}

// Is reports whether target is ErrOpen.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Config sets when a breaker opens and for how long.
type Config struct {
	// Failures is how many consecutive failures open the breaker (≥ 1).
	Failures int
	// Cooldown is how long an open breaker refuses calls before it admits a trial (> 0).
	Cooldown time.Duration
}

// Validate reports an invalid config.
func (c Config) Validate() error {
	var errs []error
	if c.Failures < 1 {
		errs = append(errs, fmt.Errorf("breaker: failures %d, must be at least 1", c.Failures))
	}
	if c.Cooldown <= 0 {
		errs = append(errs, fmt.Errorf("breaker: cooldown %s, must be positive", c.Cooldown))
	}
	return errors.Join(errs...)
}

// Deps are a breaker's collaborators; all are optional.
type Deps struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnChange is called after every state change, outside the breaker's lock.
	OnChange func(from, to State)
	// Metrics exports the state and transitions labelled Component and Target. Both labels
	// must come from a bounded set (a backend name, a tenant id).
	Metrics           *Metrics
	Component, Target string
}

// Breaker is a circuit breaker. It is safe for concurrent use.
type Breaker struct {
	cfg      Config
	now      func() time.Time
	onChange func(from, to State)
	metrics  *Metrics
	labels   [2]string

	mu       sync.Mutex
	state    State
	gen      uint64 // incremented on every state change
	failures int
	openedAt time.Time
	trial    bool // a half-open trial is out
	opens    uint64
}

// New returns a closed breaker.
func New(cfg Config, deps Deps) (*Breaker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	b := &Breaker{cfg: cfg, now: now, onChange: deps.OnChange, metrics: deps.Metrics, labels: [2]string{deps.Component, deps.Target}}
	if b.metrics != nil {
		b.metrics.track(b)
	}
	return b, nil
}

// Do runs fn if the breaker admits a call and records the Outcome fn returns. It returns fn's
// error, or an *OpenError without running fn when the breaker refuses the call. If fn panics
// (the panic continues) or exits its goroutine, the call is recorded as Neutral.
func (b *Breaker) Do(fn func() (Outcome, error)) error {
	gen, err := b.admit()
	if err != nil {
		return err
	}
	outcome := Neutral
	defer func() { b.record(gen, outcome) }()
	var ferr error
	outcome, ferr = fn()
	return ferr
}

// Ready reports whether a call would be admitted now, without admitting one, and otherwise
// how long until one may be. Callers use it to skip work that only makes sense before a call.
func (b *Breaker) Ready() (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if wait := b.refusalLocked(b.now()); wait > 0 {
		return false, wait
	}
	return true, 0
}

// State returns the current state. An open breaker whose cool-down has ended reports
// HalfOpen: its next call is the trial.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Open && !b.now().Before(b.openedAt.Add(b.cfg.Cooldown)) {
		return HalfOpen
	}
	return b.state
}

// Opens returns how many times the breaker went from closed to open: outages, not the
// re-openings of failed trials.
func (b *Breaker) Opens() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opens
}

// refusalLocked returns how long a call at now must wait, 0 when it would be admitted.
func (b *Breaker) refusalLocked(now time.Time) time.Duration {
	switch b.state {
	case Open:
		if wait := b.openedAt.Add(b.cfg.Cooldown).Sub(now); wait > 0 {
			return wait
		}
	case HalfOpen:
		if b.trial {
			return b.cfg.Cooldown
		}
	}
	return 0
}

func (b *Breaker) admit() (uint64, error) {
	b.mu.Lock()
	now := b.now()
	if wait := b.refusalLocked(now); wait > 0 {
		b.mu.Unlock()
		return 0, &OpenError{RetryIn: wait}
	}
	var changes []State
	if b.state == Open {
		changes = b.setLocked(HalfOpen, changes)
	}
	if b.state == HalfOpen {
		b.trial = true
	}
	gen := b.gen
	b.mu.Unlock()
	b.notify(changes)
	return gen, nil
}

func (b *Breaker) record(gen uint64, outcome Outcome) {
	b.mu.Lock()
	if gen != b.gen {
		b.mu.Unlock()
		return
	}
	var changes []State
	switch b.state {
	case Closed:
		switch outcome {
		case Success:
			b.failures = 0
		case Failure:
			b.failures++
			if b.failures >= b.cfg.Failures {
				b.opens++
				b.openedAt = b.now()
				changes = b.setLocked(Open, changes)
			}
		}
	case HalfOpen:
		b.trial = false
		switch outcome {
		case Success:
			b.failures = 0
			changes = b.setLocked(Closed, changes)
		case Failure:
			b.openedAt = b.now()
			changes = b.setLocked(Open, changes)
		}
	}
	b.mu.Unlock()
	b.notify(changes)
}

// setLocked moves to state and appends the pair (from, to) to changes.
func (b *Breaker) setLocked(to State, changes []State) []State {
	from := b.state
	b.state = to
	b.gen++
	return append(changes, from, to)
}

func (b *Breaker) notify(changes []State) {
	for i := 0; i+1 < len(changes); i += 2 {
		if b.metrics != nil {
			b.metrics.transition(b, changes[i+1])
		}
		if b.onChange != nil {
			b.onChange(changes[i], changes[i+1])
		}
	}
}
