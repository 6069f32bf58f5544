// Package sweeper is the sweeper role: under the "sweeper" lease it trims the queue's retained
// history to the configured window, and shorter while a partition stream holds more than half its
// byte bound — never past a consumer's ack floor, which the queue's Trim and TrimToFit enforce —
// removes expired idempotency records, applies the dead-letter retention, and compacts the batch
// journal (whose plans have no expiry). It reports what it did, and who holds the lease with which
// fencing token, in metrics.
package sweeper

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/coord"
	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/mq"
)

// LeaseName is the singleton lease the sweeper runs under.
const LeaseName = "sweeper"

// Config tunes the sweeper.
type Config struct {
	// Interval between two sweeps.
	Interval time.Duration
	// HistoryWindow is how long accepted records stay replayable (SSE resume); older ones are
	// trimmed once inserted. It is an upper bound: while a partition stream holds more than
	// FitShare of its byte bound, its oldest inserted records are trimmed sooner.
	HistoryWindow time.Duration
	// ResolveWindow, when set, is how long every frame is kept whatever HistoryWindow says: the
	// queue's duplicate window while idempotency keys are on. A retry resolves the frame its
	// claim was marked with by reading it back (docs/adr/0012); a frame trimmed sooner cannot be
	// read, and once the mark ends the retry would enqueue the request's rows a second time. The
	// trim to fit the stream's byte bound keeps less: within the window, only the frames from the
	// first keyed one on (mq.Trimmer.TrimToFit).
	ResolveWindow time.Duration
	// MinHistory is how long every inserted frame is kept whatever the stream's byte bound says:
	// twice mq.ack_wait, so a batch the writer recovers after a crash (its frames redelivered
	// within ack_wait) finds its frames, and a reader near the end of the stream is not trimmed
	// under. Zero: none.
	MinHistory time.Duration
	// FitEvery is the time between two checks, between sweeps, of whether a partition stream
	// holds more than FitShare of its byte bound; zero means min(Interval, DefaultFitEvery).
	// Not a setting: tests shorten it.
	FitEvery time.Duration
	// DLQRetention is how long dead-lettered records are kept (0: forever).
	DLQRetention time.Duration
	// Instance names this process in the lease metrics.
	Instance string
}

// Queue is what the sweeper needs of the queue.
type Queue interface {
	mq.Trimmer
	Partitions() int
}

// FitShare is the share of a partition stream's byte bound above which the sweeper trims the
// oldest acknowledged frames, down to that share: retained history is kept up to HistoryWindow
// only while it fits in half the stream, so it can never fill the stream and make ingest refuse
// rows (the stream discards new publishes at its bound).
const FitShare = 0.5

// DefaultFitEvery bounds the time between two checks of the streams' fullness: the sweep
// interval (1 minute by default) is too long, as a minute at 10 MB/s is 600 MB, more than the
// default 1 GiB stream has free over its half.
const DefaultFitEvery = 10 * time.Second

// JournalGrace is how old a forgotten plan's delete marker, or a plan whose frames are all
// acknowledged, must be before CompactJournal removes it.
const JournalGrace = time.Hour

// Deps are the sweeper's collaborators; Dedupe, DLQ and Journal may be nil.
type Deps struct {
	Coord      coord.Coordinator
	Queue      Queue
	Dedupe     dedupe.Sweeper
	DLQ        mq.DeadLetterExpirer
	Journal    mq.JournalCompactor
	Registerer prometheus.Registerer
	Log        *slog.Logger
	Now        func() time.Time
}

// Sweeper runs the sweeps while it holds the lease.
type Sweeper struct {
	cfg  Config
	deps Deps
	m    metrics
}

type metrics struct {
	swept, expired, compacted prometheus.Counter
	trimmed, runs             *prometheus.CounterVec
	token                     prometheus.Gauge
	holding                   prometheus.Gauge
}

// New returns a sweeper; it starts nothing.
func New(cfg Config, deps Deps) (*Sweeper, error) {
	if deps.Coord == nil || deps.Queue == nil {
		return nil, errors.New("sweeper: Coord and Queue are required")
	}
	if cfg.Interval <= 0 || cfg.HistoryWindow <= 0 {
		return nil, errors.New("sweeper: interval and history_window must be positive")
	}
	if cfg.FitEvery <= 0 {
		cfg.FitEvery = min(cfg.Interval, DefaultFitEvery)
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	s := &Sweeper{cfg: cfg, deps: deps, m: metrics{
		trimmed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wavehouse_sweeper_trimmed_frames_total",
			Help: "Queue frames removed from retained history, by reason: age (older than stream.history_window) or size (the partition stream held more than half its byte bound)."},
			[]string{"reason"}),
		swept:   prometheus.NewCounter(prometheus.CounterOpts{Name: "wavehouse_sweeper_dedupe_swept_total", Help: "Expired idempotency records removed."}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{Name: "wavehouse_sweeper_dlq_expired_total", Help: "Dead-letter entries removed after their retention."}),
		compacted: prometheus.NewCounter(prometheus.CounterOpts{Name: "wavehouse_sweeper_journal_compacted_total",
			Help: "Batch plans removed from the journal because all their frames were acknowledged (a lost forget)."}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wavehouse_sweeper_runs_total", Help: "Sweeps by outcome."}, []string{"outcome"}),
		token: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wavehouse_sweeper_lease_token", Help: "Fencing token of the sweeper lease this process holds (0: not holding).",
			ConstLabels: prometheus.Labels{"instance_id": cfg.Instance}}),
		holding: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wavehouse_sweeper_lease_held", Help: "1 while this process holds the sweeper lease.",
			ConstLabels: prometheus.Labels{"instance_id": cfg.Instance}}),
	}}
	for _, r := range []string{reasonAge, reasonSize} {
		s.m.trimmed.WithLabelValues(r)
	}
	if deps.Registerer != nil {
		var errs []error
		for _, c := range []prometheus.Collector{s.m.trimmed, s.m.swept, s.m.expired, s.m.compacted, s.m.runs, s.m.token, s.m.holding} {
			errs = append(errs, deps.Registerer.Register(c))
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Run campaigns for the lease and sweeps while holding it, until ctx ends.
func (s *Sweeper) Run(ctx context.Context) error {
	return coord.RunElected(ctx, s.deps.Coord, LeaseName, s.hold, coord.ElectOptions{Logger: s.deps.Log})
}

func (s *Sweeper) hold(ctx context.Context, term coord.Term) error {
	s.m.holding.Set(1)
	s.m.token.Set(float64(term.Token()))
	defer func() { s.m.holding.Set(0); s.m.token.Set(0) }()
	s.deps.Log.Info("sweeper lease acquired", "holder", term.Holder(), "token", term.Token())
	sweep := time.NewTicker(s.cfg.Interval)
	defer sweep.Stop()
	var fit <-chan time.Time // nil, never ready, when every sweep is a fit check already
	if s.cfg.FitEvery < s.cfg.Interval {
		ft := time.NewTicker(s.cfg.FitEvery)
		defer ft.Stop()
		fit = ft.C
	}
	for {
		s.Sweep(ctx)
		for swept := false; !swept; {
			select {
			case <-ctx.Done():
				return nil
			case <-sweep.C:
				swept = true
			case <-fit:
				s.Fit(ctx)
			}
		}
	}
}

// Reasons of a trim (the reason label of wavehouse_sweeper_trimmed_frames_total).
const (
	reasonAge  = "age"
	reasonSize = "size"
)

// Fit trims every partition stream that holds more than FitShare of its byte bound back to that
// share, removing its oldest acknowledged frames but none younger than MinHistory and, within
// ResolveWindow, none from the first keyed frame on. It reports whether every partition could be
// checked.
func (s *Sweeper) Fit(ctx context.Context) bool {
	var keep mq.FitKeep
	now := s.deps.Now()
	if s.cfg.MinHistory > 0 {
		keep.All = now.Add(-s.cfg.MinHistory)
	}
	if s.cfg.ResolveWindow > 0 {
		keep.Keyed = now.Add(-s.cfg.ResolveWindow)
	}
	ok := true
	for p := range s.deps.Queue.Partitions() {
		n, err := s.deps.Queue.TrimToFit(ctx, p, FitShare, keep)
		if err != nil {
			ok = false
			s.deps.Log.Warn("trim to fit failed", "partition", p, "error", err)
			continue
		}
		s.m.trimmed.WithLabelValues(reasonSize).Add(float64(n))
	}
	return ok
}

// Sweep runs one sweep now: the age trim, then Fit, then the other chores.
func (s *Sweeper) Sweep(ctx context.Context) {
	now := s.deps.Now()
	cutoff := now.Add(-max(s.cfg.HistoryWindow, s.cfg.ResolveWindow))
	outcome := "ok"
	for p := range s.deps.Queue.Partitions() {
		n, err := s.deps.Queue.Trim(ctx, p, 0, cutoff)
		if err != nil {
			outcome = "error"
			s.deps.Log.Warn("trim failed", "partition", p, "error", err)
			continue
		}
		s.m.trimmed.WithLabelValues(reasonAge).Add(float64(n))
	}
	if !s.Fit(ctx) {
		outcome = "error"
	}
	if s.deps.Dedupe != nil {
		n, err := s.deps.Dedupe.Sweep(ctx, now)
		if err != nil {
			outcome = "error"
			s.deps.Log.Warn("dedupe sweep failed", "error", err)
		}
		s.m.swept.Add(float64(n))
	}
	if s.deps.DLQ != nil && s.cfg.DLQRetention > 0 {
		n, err := s.deps.DLQ.Expire(ctx, now.Add(-s.cfg.DLQRetention))
		if err != nil {
			outcome = "error"
			s.deps.Log.Warn("dead-letter expiry failed", "error", err)
		}
		s.m.expired.Add(float64(n))
	}
	if s.deps.Journal != nil {
		n, err := s.deps.Journal.CompactJournal(ctx, now.Add(-JournalGrace))
		if err != nil {
			outcome = "error"
			s.deps.Log.Warn("journal compaction failed", "error", err)
		}
		s.m.compacted.Add(float64(n))
	}
	s.m.runs.WithLabelValues(outcome).Inc()
}
