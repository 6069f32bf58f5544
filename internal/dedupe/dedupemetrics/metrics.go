// Package dedupemetrics wraps a dedupe.Store with Prometheus metrics: Reserve outcomes, call
// latency and errors by kind. The app applies it once, after choosing the backend.
package dedupemetrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// Reserve outcome label values. OutcomeExpired is a claim that replaced an expired record.
const (
	OutcomeNew     = "new"
	OutcomeExpired = "expired"
	// OutcomeMarkLapsed is a claim over an earlier attempt whose mark lapsed (Reservation.MarkLapsed).
	OutcomeMarkLapsed = "mark_lapsed"
	OutcomeReplayed   = "replayed"
	OutcomeInFlight   = "in_flight"
	OutcomeConflict   = "conflict"
)

// Metrics holds the collectors, registered once and shared by every wrapped store.
type Metrics struct {
	outcomes *prometheus.CounterVec
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	swept    prometheus.Counter
}

// New creates the collectors and registers them with reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_dedupe_reserve_total",
			Help: "Idempotency-key reservations by outcome (new, expired, mark_lapsed: claimed over an earlier attempt whose queue frame can no longer be resolved, so it may be enqueued twice; replayed, in_flight, conflict).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wavehouse_dedupe_call_duration_seconds",
			Help:    "Latency of dedupe store calls by operation (reserve, mark, commit, release, get, sweep).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_dedupe_errors_total",
			Help: "Failed dedupe store calls by operation and kind (unavailable, closed, not_owner, invalid, canceled, other).",
		}, []string{"op", "kind"}),
		swept: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wavehouse_dedupe_swept_total",
			Help: "Expired idempotency records deleted by the sweeper.",
		}),
	}
	for _, c := range []prometheus.Collector{m.outcomes, m.duration, m.errors, m.swept} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Wrap returns s with metrics. The result implements dedupe.Sweeper exactly when s does.
func (m *Metrics) Wrap(s dedupe.Store) dedupe.Store {
	w := &store{inner: s, m: m}
	if sw, ok := s.(dedupe.Sweeper); ok {
		return &sweepingStore{store: w, sweeper: sw}
	}
	return w
}

type store struct {
	inner dedupe.Store
	m     *Metrics
}

type sweepingStore struct {
	*store
	sweeper dedupe.Sweeper
}

var (
	_ dedupe.Store   = (*store)(nil)
	_ dedupe.Sweeper = (*sweepingStore)(nil)
)

func (s *store) observe(op string, start time.Time, err error) {
	s.m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		s.m.errors.WithLabelValues(op, kind(err)).Inc()
	}
}

func (s *store) Reserve(ctx context.Context, key dedupe.Key, fingerprint string, lease time.Duration) (dedupe.Reservation, error) {
	start := time.Now()
	res, err := s.inner.Reserve(ctx, key, fingerprint, lease)
	s.observe("reserve", start, err)
	if err == nil {
		s.m.outcomes.WithLabelValues(outcome(res)).Inc()
	}
	return res, err
}

func (s *store) Commit(ctx context.Context, key dedupe.Key, token string, resp dedupe.Response, retention time.Duration) error {
	start := time.Now()
	err := s.inner.Commit(ctx, key, token, resp, retention)
	s.observe("commit", start, err)
	return err
}

func (s *store) Release(ctx context.Context, key dedupe.Key, token string) error {
	start := time.Now()
	err := s.inner.Release(ctx, key, token)
	s.observe("release", start, err)
	return err
}

// Mark observes one call ("mark") and counts each claim's error.
func (s *store) Mark(ctx context.Context, frame string, until time.Time, claims []dedupe.Owned) []error {
	start := time.Now()
	errs := s.inner.Mark(ctx, frame, until, claims)
	s.m.duration.WithLabelValues("mark").Observe(time.Since(start).Seconds())
	for _, err := range errs {
		if err != nil {
			s.m.errors.WithLabelValues("mark", kind(err)).Inc()
		}
	}
	return errs
}

func (s *store) Get(ctx context.Context, key dedupe.Key) (dedupe.Record, error) {
	start := time.Now()
	rec, err := s.inner.Get(ctx, key)
	if errors.Is(err, dedupe.ErrNotFound) {
		s.observe("get", start, nil)
	} else {
		s.observe("get", start, err)
	}
	return rec, err
}

func (s *store) Close(ctx context.Context) error {
	return s.inner.Close(ctx)
}

func (s *sweepingStore) Sweep(ctx context.Context, now time.Time) (int, error) {
	start := time.Now()
	n, err := s.sweeper.Sweep(ctx, now)
	s.observe("sweep", start, err)
	s.m.swept.Add(float64(n))
	return n, err
}

func outcome(res dedupe.Reservation) string {
	switch res.Outcome {
	case dedupe.OutcomeClaimed:
		if res.MarkLapsed {
			return OutcomeMarkLapsed
		}
		if res.Reclaimed {
			return OutcomeExpired
		}
		return OutcomeNew
	case dedupe.OutcomeDuplicate:
		return OutcomeReplayed
	case dedupe.OutcomeInFlight:
		return OutcomeInFlight
	default:
		return OutcomeConflict
	}
}

func kind(err error) string {
	switch {
	case errors.Is(err, dedupe.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, dedupe.ErrClosed):
		return "closed"
	case errors.Is(err, dedupe.ErrNotOwner):
		return "not_owner"
	case errors.Is(err, dedupe.ErrInvalid):
		return "invalid"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	default:
		return "other"
	}
}

// OutcomeCounter returns the Reserve counter for an outcome label, for tests and dashboards
// built in code.
func (m *Metrics) OutcomeCounter(outcome string) prometheus.Counter {
	return m.outcomes.WithLabelValues(outcome)
}

// ErrorCounter returns the error counter for an operation and error kind.
func (m *Metrics) ErrorCounter(op, kind string) prometheus.Counter {
	return m.errors.WithLabelValues(op, kind)
}
