package natscoord

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/wavehouse/wavehouse/internal/coord"
)

// term is one tenure of a lease. Its renewal loop (run) owns rev until the
// loop has stopped.
type term struct {
	c     *Coordinator
	kv    jetstream.KeyValue
	name  string
	token uint64

	done    chan struct{} // closed when the term ends
	stopped chan struct{} // closed when run has returned

	rev      uint64    // latest revision written by this term
	lastSent time.Time // when the last successful write was sent

	mu  sync.Mutex
	err error
}

var _ coord.Term = (*term)(nil)

func newTerm(c *Coordinator, kv jetstream.KeyValue, name string, rev uint64, sent time.Time) *term {
	return &term{
		c: c, kv: kv, name: name, token: rev,
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
		rev:     rev, lastSent: sent,
	}
}

func (t *term) Name() string          { return t.name }
func (t *term) Token() uint64         { return t.token }
func (t *term) Holder() string        { return t.c.instance }
func (t *term) Done() <-chan struct{} { return t.done }

func (t *term) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// end ends the term with err; it reports false when the term had already
// ended.
func (t *term) end(err error) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return false
	}
	t.err = err
	close(t.done)
	return true
}

// Resign implements coord.Term: end the term, stop renewing, then delete the
// key if it still records this term.
func (t *term) Resign(ctx context.Context) error {
	if !t.end(coord.ErrResigned) {
		return nil
	}
	<-t.stopped
	err := t.c.del(ctx, t.kv, t.name, jetstream.LastRevision(t.rev))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		// A renewal abandoned on the way out may still have landed, so the
		// key can carry a newer revision of this same term.
		err = t.releaseLatest(ctx)
	}
	if err != nil {
		return translate(ctx, err)
	}
	return nil
}

// releaseLatest deletes the key at its current revision if that revision
// still belongs to this term, and does nothing if the lease was taken over.
func (t *term) releaseLatest(ctx context.Context) error {
	cur, found, err := t.c.readLatest(ctx, t.name)
	if err != nil || !found || cur.deleted {
		return err
	}
	if rec := decode(cur.value); rec.Holder != t.c.instance || tokenOf(rec, cur.rev) != t.token {
		return nil
	}
	err = t.c.del(ctx, t.kv, t.name, jetstream.LastRevision(cur.rev))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return nil
	}
	return err
}

// renew starts one renewal write in the background; its outcome arrives on
// the returned channel, and cancel abandons it.
func (t *term) renew() (<-chan renewal, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), t.c.cfg.Lease)
	ch := make(chan renewal, 1)
	rev, value := t.rev, encode(record{Holder: t.c.instance, Token: t.token})
	go func() {
		r, sent, err := t.c.write(ctx, func(ctx context.Context) (uint64, error) {
			return t.kv.Update(ctx, t.name, value, rev)
		})
		ch <- renewal{rev: r, sent: sent, err: err}
	}()
	return ch, cancel
}

// renewal is the outcome of one renewal write.
type renewal struct {
	rev  uint64
	sent time.Time // when the attempt that got this outcome was sent
	err  error
}

// run renews the lease until the term ends. A renewal that fails leaves the
// term live until Lease - SafetyMargin after the last successful one was
// sent, then the term ends with ErrLeaseLost: no candidate can have taken
// over before Lease after that send (on its clock), so the holder always
// steps down first.
func (t *term) run() {
	defer close(t.stopped)
	c := t.c
	stepDown := c.cfg.Lease - c.cfg.SafetyMargin
	lost := c.clock.NewTimer(t.lastSent.Add(stepDown).Sub(c.clock.Now()))
	renew := c.clock.NewTimer(c.cfg.RenewInterval)
	defer func() {
		lost.Stop()
		renew.Stop()
	}()

	var (
		inflight <-chan renewal
		cancel   context.CancelFunc = func() {}
	)
	// finish waits for an in-flight renewal so that rev is final for Resign.
	finish := func() {
		if inflight == nil {
			return
		}
		cancel()
		if r := <-inflight; r.err == nil {
			t.rev = r.rev
		}
	}
	for {
		select {
		case <-t.done:
			finish()
			return
		case <-lost.C():
			t.end(fmt.Errorf("%w: %q not renewed within %s", coord.ErrLeaseLost, t.name, stepDown))
			finish()
			return
		case <-renew.C():
			inflight, cancel = t.renew()
		case r := <-inflight:
			cancel()
			inflight = nil
			switch {
			case r.err == nil:
				t.rev, t.lastSent = r.rev, r.sent
				lost.Stop()
				lost = c.clock.NewTimer(r.sent.Add(stepDown).Sub(c.clock.Now()))
				renew = c.clock.NewTimer(c.cfg.RenewInterval)
			case errors.Is(r.err, jetstream.ErrKeyRevisionMismatch), errors.Is(r.err, jetstream.ErrKeyNotFound):
				t.end(fmt.Errorf("%w: %q was taken over: %w", coord.ErrLeaseLost, t.name, r.err))
				return
			default:
				c.log.Warn("coord: lease renewal failed", "lease", t.name, "token", t.token, "error", r.err)
				renew = c.clock.NewTimer(c.cfg.RenewInterval / 4)
			}
		}
	}
}
