package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// Sentinel errors of the stream service.
var (
	// ErrClosed is returned by calls made after Close.
	ErrClosed = errors.New("stream: closed")
	// errEnded tells a source that its subscriber is gone.
	errEnded = errors.New("stream: subscriber ended")
)

// Deps are the service's collaborators.
type Deps struct {
	// Queue reads a table's records in order (required).
	Queue mq.Replayer
	// Registerer, when not nil, receives the stream metrics.
	Registerer prometheus.Registerer
	// Log receives warnings about failed queue readers; nil discards.
	Log *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Service serves live SSE streams of accepted rows. It starts no goroutine
// until a stream is requested: each table with live subscribers has one
// shared queue reader, and each resuming subscriber has its own ordered
// reader that continues live.
type Service struct {
	cfg     Config
	deps    Deps
	metrics *metrics

	ctx    context.Context // ends at Close; every reader derives from it
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool

	mu      sync.Mutex
	hubs    map[mq.TableKey]*hub
	tenants map[string]int
}

// New validates cfg and returns the service; it starts nothing.
func New(cfg Config, deps Deps) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Queue == nil {
		return nil, errors.New("stream: Deps.Queue is required")
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	m, err := newMetrics(deps.Registerer)
	if err != nil {
		return nil, fmt.Errorf("stream: metrics: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{
		cfg: cfg.withDefaults(), deps: deps, metrics: m, ctx: ctx, cancel: cancel,
		hubs: map[mq.TableKey]*hub{}, tenants: map[string]int{},
	}, nil
}

// Close ends every stream and queue reader and waits for them (bounded by
// ctx). It is idempotent; streams requested afterwards are refused.
func (s *Service) Close(ctx context.Context) error {
	// Readers are added under mu only while not closed, so no wg.Add can
	// race with the Wait below.
	s.mu.Lock()
	s.closed.Store(true)
	s.mu.Unlock()
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stream: close: %w", ctx.Err())
	}
}

// acquire takes one of tenant's subscriber slots.
func (s *Service) acquire(tenant string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.MaxSubscribers >= 0 && s.tenants[tenant] >= s.cfg.MaxSubscribers {
		return false
	}
	s.tenants[tenant]++
	s.metrics.subscribers.Inc()
	return true
}

func (s *Service) release(tenant string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tenants[tenant]--; s.tenants[tenant] <= 0 {
		delete(s.tenants, tenant)
	}
	s.metrics.subscribers.Dec()
}

// Subscribers returns the number of open streams of tenant in this process.
func (s *Service) Subscribers(tenant string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tenants[tenant]
}

// resume starts sub's private ordered reader strictly after from (the
// client's id is requested); it feeds sub until ctx ends, then ends sub
// with the reader's error. The caller waits for the returned channel to
// close. It returns nil after Close.
func (s *Service) resume(ctx context.Context, key mq.TableKey, from mq.Cursor, requested string, sub *subscriber) <-chan struct{} {
	done := make(chan struct{})
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return nil
	}
	s.wg.Add(1)
	s.mu.Unlock()
	s.metrics.readers.Inc()
	go func() {
		defer s.wg.Done()
		defer close(done)
		defer s.metrics.readers.Dec()
		err := s.deps.Queue.Replay(ctx, key.Tenant, key.Table, from, func(e mq.Event) error {
			if e.Reset != nil {
				return sub.put(ctx, item{reset: &reset{Reset: *e.Reset, epoch: e.Epoch, requested: requested}})
			}
			if e.Gap != nil {
				return sub.put(ctx, item{ev: newGapEvent(e.Epoch, e.Gap)})
			}
			if e.Record == nil {
				return nil
			}
			return sub.put(ctx, item{ev: newEvent(e.Epoch, e.Record)})
		})
		if ctx.Err() == nil && !errors.Is(err, errEnded) {
			s.deps.Log.Warn("stream: resuming queue reader ended", "tenant", key.Tenant, "table", key.Table, "error", err)
		}
		sub.end(err)
	}()
	return done
}
