package stream

import (
	"context"
	"sync"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// item is one entry of a subscriber's buffer: a record, a reset or a gap.
type item struct {
	ev    *event
	reset *reset
	gap   *gap
}

// reset is a mq.Reset of history epoch, for the id the client sent.
type reset struct {
	mq.Reset
	epoch     string
	requested string
}

// gap is a run of events a slow live subscriber missed.
type gap struct {
	// epoch is the history of every position below.
	epoch string
	// after is the last id queued before the gap (zero when none was).
	after    mq.Position
	hasAfter bool
	from, to mq.Position
	events   int
}

// subscriber is the bounded buffer between a source (the table's shared
// live reader, or a private resuming reader) and one HTTP response.
type subscriber struct {
	tenant  string
	max     int
	policy  string
	started int64 // unix nanoseconds; events accepted earlier are replayed history

	mu         sync.Mutex
	items      []item
	head       int
	pendingGap *gap
	last       mq.Position
	hasLast    bool
	done       bool
	endErr     error
	slow       bool

	notify chan struct{} // capacity 1: something to write
	space  chan struct{} // capacity 1: the buffer has room
}

func newSubscriber(tenant string, max int, policy string, started int64) *subscriber {
	return &subscriber{
		tenant: tenant, max: max, policy: policy, started: started,
		notify: make(chan struct{}, 1), space: make(chan struct{}, 1),
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (s *subscriber) queued() int { return len(s.items) - s.head }

// offer queues ev without ever blocking (the shared live reader calls it).
// When the buffer is full the policy applies: the event joins the pending
// gap, or the subscriber ends as slow. It reports whether a gap started and
// whether the subscriber was disconnected by this call.
func (s *subscriber) offer(ev *event) (gapStarted, disconnected bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return false, false
	}
	if s.queued() >= s.max {
		if s.policy == PolicyDisconnect {
			s.done, s.slow = true, true
			signal(s.notify)
			return false, true
		}
		if s.pendingGap == nil {
			s.pendingGap = &gap{epoch: ev.epoch, after: s.last, hasAfter: s.hasLast, from: ev.pos}
			gapStarted = true
		}
		s.pendingGap.to = ev.pos
		s.pendingGap.events++
		return gapStarted, false
	}
	if s.pendingGap != nil {
		s.items = append(s.items, item{gap: s.pendingGap})
		s.pendingGap = nil
	}
	s.items = append(s.items, item{ev: ev})
	s.last, s.hasLast = ev.pos, true
	signal(s.notify)
	return false, false
}

// put queues it, waiting for room (a private reader calls it: it slows only
// its own reader). It fails when the subscriber ended or ctx ended.
func (s *subscriber) put(ctx context.Context, it item) error {
	for {
		s.mu.Lock()
		if s.done {
			s.mu.Unlock()
			return errEnded
		}
		if s.queued() < s.max {
			s.items = append(s.items, it)
			if it.ev != nil {
				s.last, s.hasLast = it.ev.pos, true
			}
			s.mu.Unlock()
			signal(s.notify)
			return nil
		}
		s.mu.Unlock()
		select {
		case <-s.space:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// end stops the subscriber; the writer sees it before any queued item.
func (s *subscriber) end(err error) {
	s.mu.Lock()
	if !s.done {
		s.done, s.endErr = true, err
	}
	s.mu.Unlock()
	signal(s.notify)
}

// take moves up to len(dst) queued items into dst. It returns how many,
// and whether the subscriber ended (then nothing is returned).
func (s *subscriber) take(dst []item) (n int, ended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return 0, true
	}
	for n < len(dst) && s.head < len(s.items) {
		dst[n] = s.items[s.head]
		s.items[s.head] = item{}
		s.head++
		n++
	}
	if s.head == len(s.items) {
		s.items, s.head = s.items[:0], 0
		if n < len(dst) && s.pendingGap != nil {
			dst[n] = item{gap: s.pendingGap}
			s.pendingGap = nil
			n++
		}
	} else if s.head > s.max {
		// Keep the backing array bounded when the writer never drains it.
		k := copy(s.items, s.items[s.head:])
		clear(s.items[k:])
		s.items, s.head = s.items[:k], 0
	}
	if n > 0 {
		signal(s.space)
	}
	return n, false
}

// ended returns why the subscriber ended: slow is true under the
// disconnect policy, err is the source's failure (nil when none).
func (s *subscriber) ended() (slow bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slow, s.endErr
}
