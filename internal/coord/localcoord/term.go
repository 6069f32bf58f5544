package localcoord

import (
	"context"
	"sync"
	"time"

	"github.com/wavehouse/wavehouse/internal/coord"
)

// term is a live or ended local lease term. Its mutable fields are guarded
// by the owner's Table.mu.
type term struct {
	owner  *Coordinator
	name   string
	token  uint64
	holder string
	done   chan struct{}

	abandoned   bool
	abandonedAt time.Time

	errMu sync.Mutex
	err   error
}

var _ coord.Term = (*term)(nil)

func (t *term) Name() string          { return t.name }
func (t *term) Token() uint64         { return t.token }
func (t *term) Holder() string        { return t.holder }
func (t *term) Done() <-chan struct{} { return t.done }

func (t *term) Err() error {
	t.errMu.Lock()
	defer t.errMu.Unlock()
	return t.err
}

// Resign implements coord.Term. The table is in-process, so ctx is not used.
func (t *term) Resign(context.Context) error {
	tb := t.owner.table
	tb.mu.Lock()
	defer tb.mu.Unlock()
	t.endLocked(coord.ErrResigned)
	return nil
}

// expired reports whether an abandoned term's lease has run out at now.
func (t *term) expired(now time.Time, lease time.Duration) bool {
	return t.abandoned && now.Sub(t.abandonedAt) >= lease
}

// endLocked ends the term with err and frees its lease; it is a no-op on an
// ended term. The caller holds the Table's mutex.
func (t *term) endLocked(err error) {
	t.errMu.Lock()
	defer t.errMu.Unlock()
	if t.err != nil {
		return
	}
	t.err = err
	close(t.done)
	tb := t.owner.table
	if tb.leases[t.name] == t {
		delete(tb.leases, t.name)
	}
	// The owner's mutex may already be held (TryAcquire, Close), so the
	// terms set is pruned lazily: an ended term in it is harmless because
	// endLocked is idempotent.
}
