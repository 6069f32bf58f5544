// Package commits tells a waiting ingest request what became of its record once the ingest
// role settled it: inserted into ClickHouse, or moved to the dead-letter queue. It backs
// `?wait=committed` when api and ingest run in one process.
package commits

import (
	"context"
	"sync"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// Outcome is how a record was settled.
type Outcome int

// The outcomes.
const (
	// Inserted: every row of the record is in ClickHouse.
	Inserted Outcome = iota + 1
	// DeadLettered: the record is in the dead-letter queue with its reason.
	DeadLettered
)

type key struct {
	tenant, table string
	pos           mq.Position
}

// Log remembers the outcome of the most recent settled records (a bounded FIFO) and wakes the
// waiters of each. A waiter that registers after its record settled still finds the outcome, as
// long as fewer than the capacity records settled in between. It is safe for concurrent use.
type Log struct {
	mu      sync.Mutex
	cap     int
	done    map[key]Outcome
	order   []key
	head    int
	waiters map[key][]chan Outcome
}

// New returns a log that remembers up to capacity outcomes.
func New(capacity int) *Log {
	if capacity < 1 {
		capacity = 1
	}
	return &Log{cap: capacity, done: map[key]Outcome{}, waiters: map[key][]chan Outcome{}}
}

// Settled records the outcome of the record at pos and wakes its waiters.
func (l *Log) Settled(tenant, table string, pos mq.Position, o Outcome) {
	k := key{tenant, table, pos}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, seen := l.done[k]; !seen {
		if len(l.order) < l.cap {
			l.order = append(l.order, k)
		} else {
			delete(l.done, l.order[l.head])
			l.order[l.head] = k
			l.head = (l.head + 1) % l.cap
		}
	}
	l.done[k] = o
	if len(l.waiters) == 0 {
		return // nobody waits (a load without ?wait=committed): no lookup, no delete
	}
	for _, ch := range l.waiters[k] {
		ch <- o
	}
	delete(l.waiters, k)
}

// Wait blocks until the record at pos is settled or ctx ends; it returns the outcome, or 0 and
// ctx.Err().
func (l *Log) Wait(ctx context.Context, tenant, table string, pos mq.Position) (Outcome, error) {
	k := key{tenant, table, pos}
	l.mu.Lock()
	if o, ok := l.done[k]; ok {
		l.mu.Unlock()
		return o, nil
	}
	ch := make(chan Outcome, 1)
	l.waiters[k] = append(l.waiters[k], ch)
	l.mu.Unlock()
	select {
	case o := <-ch:
		return o, nil
	case <-ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		ws := l.waiters[k]
		for i, w := range ws {
			if w == ch {
				l.waiters[k] = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(l.waiters[k]) == 0 {
			delete(l.waiters, k)
		}
		select {
		case o := <-ch: // settled while we were giving up
			return o, nil
		default:
		}
		return 0, ctx.Err()
	}
}
