// Package localcoord implements coord.Coordinator with in-process leases
// (coord.backend: local). It is correct only when every contender lives in
// the same process, which is why a split deployment refuses it for the
// sweeper role.
package localcoord

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wavehouse/wavehouse/internal/coord"
)

// Deps are the collaborators of a Coordinator.
type Deps struct {
	// Table is the lease table shared with other coordinators; nil gives a
	// private table.
	Table *Table
	// Clock times abandoned leases. Default coord.SystemClock().
	Clock coord.Clock
	// Instance identifies this coordinator as a holder. Default
	// coord.DefaultInstance().
	Instance string
}

// Coordinator grants leases from an in-process Table.
type Coordinator struct {
	lease    time.Duration
	table    *Table
	clock    coord.Clock
	instance string

	mu        sync.Mutex // guards the fields below; taken after table.mu
	closed    bool
	abandoned bool
	terms     map[*term]struct{}
	stop      chan struct{} // closed by Close to end expiry waiters
	wg        sync.WaitGroup
}

var (
	_ coord.Coordinator  = (*Coordinator)(nil)
	_ coord.HolderReader = (*Coordinator)(nil)
)

// New returns a coordinator. It starts no goroutines.
func New(cfg Config, deps Deps) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if deps.Table == nil {
		deps.Table = NewTable()
	}
	if deps.Clock == nil {
		deps.Clock = coord.SystemClock()
	}
	if deps.Instance == "" {
		deps.Instance = coord.DefaultInstance()
	}
	return &Coordinator{
		lease:    cfg.Lease,
		table:    deps.Table,
		clock:    deps.Clock,
		instance: deps.Instance,
		terms:    make(map[*term]struct{}),
		stop:     make(chan struct{}),
	}, nil
}

// Instance returns the identity this coordinator holds leases under.
func (c *Coordinator) Instance() string { return c.instance }

// TryAcquire implements coord.Coordinator.
func (c *Coordinator) TryAcquire(ctx context.Context, name string) (coord.Term, error) {
	if err := coord.ValidateName(name); err != nil {
		return nil, fmt.Errorf("%w: %q", err, name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tb := c.table
	tb.mu.Lock()
	defer tb.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.abandoned {
		return nil, coord.ErrClosed
	}
	if old := tb.leases[name]; old != nil {
		if !old.expired(c.clock.Now(), c.lease) {
			return nil, fmt.Errorf("%w: %q by %s", coord.ErrHeld, name, old.holder)
		}
		old.endLocked(fmt.Errorf("%w: abandoned by its holder and taken over", coord.ErrLeaseLost))
	}
	for old := range c.terms {
		if old.Err() != nil {
			delete(c.terms, old)
		}
	}
	tb.tokens[name]++
	t := &term{
		owner:  c,
		name:   name,
		token:  tb.tokens[name],
		holder: c.instance,
		done:   make(chan struct{}),
	}
	tb.leases[name] = t
	c.terms[t] = struct{}{}
	return t, nil
}

// Holder implements coord.HolderReader.
func (c *Coordinator) Holder(ctx context.Context, name string) (coord.Lease, bool, error) {
	if err := coord.ValidateName(name); err != nil {
		return coord.Lease{}, false, fmt.Errorf("%w: %q", err, name)
	}
	if err := ctx.Err(); err != nil {
		return coord.Lease{}, false, err
	}
	tb := c.table
	tb.mu.Lock()
	defer tb.mu.Unlock()
	c.mu.Lock()
	closed := c.closed || c.abandoned
	c.mu.Unlock()
	if closed {
		return coord.Lease{}, false, coord.ErrClosed
	}
	t := tb.leases[name]
	if t == nil || t.expired(c.clock.Now(), c.lease) {
		return coord.Lease{}, false, nil
	}
	return coord.Lease{Name: name, Holder: t.holder, Token: t.token}, true, nil
}

// Abandon stops this coordinator the way a crash would: its leases are not
// resigned but stay taken until the lease duration has passed on the clock,
// then its terms end with coord.ErrLeaseLost and others may acquire them.
// Later calls return coord.ErrClosed. It exists to exercise lease expiry.
func (c *Coordinator) Abandon() {
	tb := c.table
	tb.mu.Lock()
	defer tb.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.abandoned {
		return
	}
	c.abandoned = true
	now := c.clock.Now()
	for t := range c.terms {
		if t.Err() != nil {
			continue
		}
		t.abandonedAt = now
		t.abandoned = true
		timer := c.clock.NewTimer(c.lease)
		c.wg.Go(func() { c.expireAfter(t, timer) })
	}
}

// expireAfter ends an abandoned term once its lease has run out, so that
// the holder steps down no later than anyone can take over.
func (c *Coordinator) expireAfter(t *term, timer coord.Timer) {
	select {
	case <-c.stop:
		timer.Stop()
	case <-timer.C():
		c.table.mu.Lock()
		defer c.table.mu.Unlock()
		t.endLocked(fmt.Errorf("%w: abandoned by its holder", coord.ErrLeaseLost))
	}
}

// Close implements coord.Coordinator: it resigns every live term (unless the
// coordinator was abandoned) and stops background waiters.
func (c *Coordinator) Close(context.Context) error {
	tb := c.table
	tb.mu.Lock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		tb.mu.Unlock()
		return nil
	}
	c.closed = true
	if !c.abandoned {
		for t := range c.terms {
			t.endLocked(coord.ErrResigned)
		}
	}
	close(c.stop)
	c.mu.Unlock()
	tb.mu.Unlock()
	c.wg.Wait()
	return nil
}
