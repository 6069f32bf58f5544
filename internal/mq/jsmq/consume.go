package jsmq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// Subscribe implements mq.Consumer: a pull subscription on the partition's
// durable ingest consumer.
func (q *Queue) Subscribe(ctx context.Context, p int) (mq.Subscription, error) {
	if err := q.checkPartition(p); err != nil {
		return nil, err
	}
	if q.isClosed() {
		return nil, mq.ErrClosed
	}
	var cons jetstream.Consumer
	err := q.rpc(ctx, func(ctx context.Context) error {
		var err error
		cons, err = q.js.Consumer(ctx, q.names.Stream(p), ConsumerName)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("consumer %s on stream %s: %w", ConsumerName, q.names.Stream(p), err)
	}
	s := &subscription{q: q, p: p, cons: cons, done: make(chan struct{})}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil, mq.ErrClosed
	}
	q.subs[s] = struct{}{}
	q.mu.Unlock()
	return s, nil
}

type subscription struct {
	q    *Queue
	p    int
	cons jetstream.Consumer

	once sync.Once
	done chan struct{}
	mu   sync.Mutex
	err  error
}

var _ mq.Subscription = (*subscription)(nil)

func (s *subscription) end(cause error) {
	s.once.Do(func() {
		s.mu.Lock()
		s.err = fmt.Errorf("%w: %w", mq.ErrDeliveryEnded, cause)
		s.mu.Unlock()
		close(s.done)
		s.q.mu.Lock()
		delete(s.q.subs, s)
		s.q.mu.Unlock()
	})
}

func (s *subscription) Done() <-chan struct{} { return s.done }

func (s *subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *subscription) Close() error {
	s.end(errors.New("subscription closed"))
	return nil
}

// pullSlice bounds one pull request. A long Fetch wait is split into pulls
// of at most this long so that a Fetch whose ctx ends returns soon after,
// having waited for the current pull to end instead of abandoning it (see
// pull).
const pullSlice = 500 * time.Millisecond

// Fetch implements mq.Subscription.
func (s *subscription) Fetch(ctx context.Context, max int, wait time.Duration) ([]mq.Delivery, error) {
	if max <= 0 {
		max = 1
	}
	deadline := time.Now().Add(wait)
	for {
		select {
		case <-s.done:
			return nil, s.Err()
		default:
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := s.q.checkConn(); err != nil {
			if errors.Is(err, mq.ErrClosed) {
				s.end(mq.ErrClosed)
				return nil, s.Err()
			}
			return nil, err
		}
		pw := min(time.Until(deadline), pullSlice)
		if pw < 10*time.Millisecond {
			pw = 10 * time.Millisecond
		}
		out, err := s.pull(ctx, max, pw)
		if err != nil || len(out) > 0 || !time.Now().Before(deadline) {
			return out, err
		}
	}
}

// pull sends one pull request that the server expires after wait and reads
// it to its end.
//
// The pull's lifetime is the server's: FetchMaxWait makes the server expire
// the request after wait and end it with a status message that follows, on
// the same inbox, every frame it delivered to the request, and the client
// listens until that status (or a grace second after wait). A pull bound to
// a context deadline instead (jetstream.FetchContext) stops listening at the
// deadline while the server may still be delivering to the request: a frame
// delivered then is dropped by the client unacknowledged and only comes back
// after the ack wait — the "last rows stall for ~26 s" bug. For the same
// reason an ending ctx does not abandon the pull: it is read to its end
// (at most wait plus the grace second) and its frames are handed back with a
// nak, so they are redelivered at once rather than after the ack wait.
func (s *subscription) pull(ctx context.Context, max int, wait time.Duration) ([]mq.Delivery, error) {
	batch, err := s.cons.Fetch(max, jetstream.FetchMaxWait(wait))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, s.fetchErr(err)
	}
	var out []mq.Delivery
	for msg := range batch.Messages() {
		if isFence(msg) {
			// Holds no record: acknowledged unread (a failed ack redelivers it).
			_ = msg.Ack()
			continue
		}
		d, err := s.q.newDelivery(s.p, msg)
		if err != nil {
			// A message that is not a frame can never be inserted: it
			// goes to the dead-letter queue as it is (see undecodable).
			s.q.undecodable(ctx, s.p, msg, err)
			continue
		}
		out = append(out, d)
	}
	if err := ctx.Err(); err != nil {
		nctx := context.WithoutCancel(ctx)
		for _, d := range out {
			_ = d.Nak(nctx, 0)
		}
		return nil, err
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		if len(out) > 0 {
			return out, nil
		}
		return nil, s.fetchErr(err)
	}
	if len(out) == 0 {
		// An empty pull over a broken connection is a failure, not
		// "caught up".
		if st := s.q.nc.Status(); st != nats.CONNECTED {
			if s.q.isClosed() {
				s.end(mq.ErrClosed)
				return nil, s.Err()
			}
			return nil, fmt.Errorf("%w: connection %s", mq.ErrUnavailable, st)
		}
	}
	return out, nil
}

func (s *subscription) fetchErr(err error) error {
	if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, jetstream.ErrStreamNotFound) {
		s.end(err)
		return s.Err()
	}
	if s.q.isClosed() {
		s.end(mq.ErrClosed)
		return s.Err()
	}
	if errors.Is(err, nats.ErrNoResponders) && s.q.nc.Status() == nats.CONNECTED {
		// A pull on a deleted consumer gets no responder: ask whether the
		// consumer is gone for good.
		ctx, cancel := context.WithTimeout(context.Background(), s.q.opts.PublishTimeout)
		defer cancel()
		_, cerr := s.q.js.Consumer(ctx, s.q.names.Stream(s.p), ConsumerName)
		if errors.Is(cerr, jetstream.ErrConsumerNotFound) || errors.Is(cerr, jetstream.ErrStreamNotFound) {
			s.end(cerr)
			return s.Err()
		}
	}
	return translate(err)
}

type delivery struct {
	q      *Queue
	msg    jetstream.Msg
	recs   []mq.Record
	meta   mq.DeliveryMeta
	tenant string
	bytes  int64

	mu      sync.Mutex
	settled bool
}

var (
	_ mq.Delivery     = (*delivery)(nil)
	_ mq.DeadLetterer = (*delivery)(nil)
	_ mq.Extender     = (*delivery)(nil)
)

func (q *Queue) newDelivery(p int, msg jetstream.Msg) (*delivery, error) {
	md, err := msg.Metadata()
	if err != nil {
		return nil, err
	}
	tenant, table, err := q.names.ParseSubject(msg.Subject())
	if err != nil {
		return nil, err
	}
	recs, err := decodeFrame(msg.Data(), tenant, table, md.Sequence.Stream)
	if err != nil {
		return nil, err
	}
	var n int64
	for i := range recs {
		n += int64(len(recs[i].Payload))
	}
	return &delivery{
		q: q, msg: msg, recs: recs, tenant: tenant, bytes: n,
		meta: mq.DeliveryMeta{Partition: p, Seq: md.Sequence.Stream, Attempts: int(md.NumDelivered), StoredAt: md.Timestamp},
	}, nil
}

func (d *delivery) Records() []mq.Record  { return d.recs }
func (d *delivery) Meta() mq.DeliveryMeta { return d.meta }

// settle runs f once: a second settlement returns mq.ErrSettled. A failed
// f leaves the delivery unsettled so the caller may retry.
func (d *delivery) settle(ctx context.Context, final bool, f func(ctx context.Context) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.settled {
		return fmt.Errorf("%w: frame %d", mq.ErrSettled, d.meta.Seq)
	}
	if d.q.isClosed() {
		return mq.ErrClosed
	}
	if err := d.q.rpc(ctx, f); err != nil {
		return err
	}
	d.settled = true
	if final {
		d.q.releaseFrame(d.meta.Partition, d.meta.Seq, d.tenant, d.bytes)
	}
	return nil
}

func (d *delivery) Ack(ctx context.Context) error {
	return d.settle(ctx, true, func(ctx context.Context) error { return d.msg.DoubleAck(ctx) })
}

// InProgress implements mq.Extender: it resets the frame's ack timer on the server.
func (d *delivery) InProgress(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.settled {
		return fmt.Errorf("%w: frame %d", mq.ErrSettled, d.meta.Seq)
	}
	if d.q.isClosed() {
		return mq.ErrClosed
	}
	return d.q.rpc(ctx, func(context.Context) error { return d.msg.InProgress() })
}

func (d *delivery) Nak(ctx context.Context, delay time.Duration) error {
	return d.settle(ctx, false, func(context.Context) error {
		if delay <= 0 {
			return d.msg.Nak()
		}
		return d.msg.NakWithDelay(delay)
	})
}

func (d *delivery) Term(ctx context.Context, reason string) error {
	return d.settle(ctx, true, func(context.Context) error { return d.msg.TermWithReason(reason) })
}

func (d *delivery) DeadLetter(ctx context.Context, reason mq.Reason, indexes ...int) error {
	if len(indexes) == 0 {
		indexes = make([]int, len(d.recs))
		for i := range indexes {
			indexes[i] = i
		}
	}
	for _, i := range indexes {
		if i < 0 || i >= len(d.recs) {
			return fmt.Errorf("%w: record index %d of %d", mq.ErrInvalid, i, len(d.recs))
		}
	}
	if reason.Attempts == 0 {
		reason.Attempts = d.meta.Attempts
	}
	if reason.FirstFailure.IsZero() {
		reason.FirstFailure = d.meta.StoredAt
	}
	if reason.LastFailure.IsZero() {
		reason.LastFailure = d.q.now()
	}
	return d.settle(ctx, true, func(ctx context.Context) error {
		for _, i := range indexes {
			if err := d.q.deadLetter(ctx, &d.recs[i], reason); err != nil {
				return err
			}
		}
		return d.msg.DoubleAck(ctx)
	})
}
