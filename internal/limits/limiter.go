package limits

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/wavehouse/wavehouse/internal/settings"
)

// Kind names the limit a Decision is about.
type Kind string

// The kinds of limit.
const (
	// KindRequests is the requests-per-second bucket.
	KindRequests Kind = "requests"
	// KindRows is the rows-per-second bucket.
	KindRows Kind = "rows"
	// KindQueries is the concurrent-queries semaphore.
	KindQueries Kind = "queries"
)

// Config configures a Limiter.
type Config struct {
	// MaxWait is the longest a request waits for rate tokens instead of being refused, further
	// bounded by its deadline (default 0: never wait).
	MaxWait time.Duration
	// QueryWait is the longest a query waits for a concurrency slot, further bounded by its
	// deadline (default 0: refuse at once when the tenant's queries are all running).
	QueryWait time.Duration
	// Defaults are the boot defaults of the tenants' query limits (max_concurrent_queries,
	// max_result_rows, max_result_bytes, max_execution_time, cache_ttl), applied to a tenant
	// that leaves one unset and to a tenant absent from the settings (the anonymous one).
	Defaults settings.Limits
}

// Validate reports every problem with c.
func (c Config) Validate() error {
	var errs []error
	if c.MaxWait < 0 {
		errs = append(errs, errors.New("limits.max_wait: must not be negative"))
	}
	if c.QueryWait < 0 {
		errs = append(errs, errors.New("limits.query_wait: must not be negative"))
	}
	return errors.Join(errs...)
}

// Source provides the settings snapshot in force; *settings.Manager implements it.
type Source interface {
	Current() *settings.Snapshot
}

// Deps are a Limiter's collaborators.
type Deps struct {
	// Settings provides the limits; required.
	Settings Source
	// Now is the clock of the token buckets; nil means time.Now. Waiting always uses real timers.
	Now func() time.Time
	// Registerer receives wavehouse_limits_refused_total{kind}; nil registers nothing.
	Registerer prometheus.Registerer
}

// Decision is the outcome of one limit check, and what the RateLimit-* headers report.
type Decision struct {
	// Allowed is true when the request may proceed.
	Allowed bool
	// Kind is the limit that decided (the refusing one, or the tightest passed one).
	Kind Kind
	// Limited is false when no limit applies at all (no headers are written).
	Limited bool
	// Limit is the bucket's burst (or the semaphore's size).
	Limit int
	// Remaining is how many more units pass right now.
	Remaining int
	// Reset is how long until the bucket is full again.
	Reset time.Duration
	// RetryAfter is how long until a refused request would pass.
	RetryAfter time.Duration
	// Never is true when the request can never pass (more rows than the burst).
	Never bool
}

// Limiter holds every tenant's and key's buckets.
type Limiter struct {
	cfg      Config
	settings Source
	now      func() time.Time

	mu      sync.Mutex
	seen    *settings.Snapshot // snapshot the state was last pruned against
	tenants map[string]*state
	keys    map[string]*state

	refused *prometheus.CounterVec // nil without a Registerer
}

// state is the buckets of one tenant or key.
type state struct {
	limits settings.Limits
	req    *rate.Limiter // nil: unlimited
	rows   *rate.Limiter // nil: unlimited
	sem    chan struct{} // nil: unlimited
	// listed is true when the tenant was in the settings (false: boot defaults only).
	listed bool
}

// New returns a Limiter. It starts no goroutines.
func New(cfg Config, deps Deps) (*Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Settings == nil {
		return nil, errors.New("limits: Deps.Settings is required")
	}
	l := &Limiter{cfg: cfg, settings: deps.Settings, now: deps.Now, tenants: map[string]*state{}, keys: map[string]*state{}}
	if l.now == nil {
		l.now = time.Now
	}
	if deps.Registerer != nil {
		l.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_limits_refused_total", Help: "Requests refused with 429 by a tenant or key limit, by kind (requests, rows, queries).",
		}, []string{"kind"})
		if err := deps.Registerer.Register(l.refused); err != nil {
			return nil, fmt.Errorf("limits: register metrics: %w", err)
		}
	}
	return l, nil
}

// counted returns d after counting it when it is a refusal.
func (l *Limiter) counted(d Decision) Decision {
	if !d.Allowed && l.refused != nil {
		l.refused.WithLabelValues(string(d.Kind)).Inc()
	}
	return d
}

// buckets are the limiters that apply to one request, read under the lock.
type buckets struct {
	tenantReq, tenantRows, keyReq, keyRows *rate.Limiter
	sem                                    chan struct{}
}

// states returns the buckets of the tenant and the key (nil where unlimited), creating or
// updating them from the settings in force.
func (l *Limiter) states(tenant, keyID string) buckets {
	snap := l.settings.Current()
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if snap != l.seen {
		l.prune(snap)
	}
	var b buckets
	t, ok := snap.Tenant(tenant)
	var lim settings.Limits // a tenant absent from the settings gets the boot defaults
	if ok {
		lim = t.Limits
	}
	ts := upsert(l.tenants, tenant, lim.WithDefaults(l.cfg.Defaults), now)
	ts.listed = ok
	b.tenantReq, b.tenantRows, b.sem = ts.req, ts.rows, ts.sem
	if keyID != "" {
		if k, kt, ok := snap.KeyByID(keyID); ok && k.Limits != nil && kt.Name == tenant {
			ks := upsert(l.keys, keyID, *k.Limits, now)
			b.keyReq, b.keyRows = ks.req, ks.rows
		}
	}
	return b
}

// prune drops the state of tenants and keys no longer in snap.
func (l *Limiter) prune(snap *settings.Snapshot) {
	l.seen = snap
	for name, st := range l.tenants {
		// The state of a tenant the settings never listed (the anonymous one) stays: its
		// limits are the boot defaults, which no reload changes.
		if _, ok := snap.Tenant(name); !ok && st.listed {
			delete(l.tenants, name)
		}
	}
	for id := range l.keys {
		if k, _, ok := snap.KeyByID(id); !ok || k.Limits == nil {
			delete(l.keys, id)
		}
	}
}

func upsert(m map[string]*state, name string, lim settings.Limits, now time.Time) *state {
	s, ok := m[name]
	if !ok {
		s = &state{}
		m[name] = s
	} else if s.limits == lim {
		return s
	}
	s.req = setBucket(s.req, lim.RequestsPerSecond, lim.Burst, now)
	s.rows = setBucket(s.rows, lim.RowsPerSecond, lim.RowsBurst, now)
	if !ok || lim.MaxConcurrentQueries != s.limits.MaxConcurrentQueries {
		s.sem = nil
		if lim.MaxConcurrentQueries > 0 {
			// Queries holding a slot of the old semaphore release it there; the new size applies
			// to the queries that start from now on.
			s.sem = make(chan struct{}, lim.MaxConcurrentQueries)
		}
	}
	s.limits = lim
	return s
}

// setBucket creates, updates (keeping earned tokens) or removes a token bucket.
func setBucket(b *rate.Limiter, perSecond float64, burst int, now time.Time) *rate.Limiter {
	if perSecond <= 0 {
		return nil
	}
	if burst <= 0 {
		burst = max(1, int(math.Ceil(perSecond)))
	}
	if b == nil {
		return rate.NewLimiter(rate.Limit(perSecond), burst)
	}
	b.SetLimitAt(now, rate.Limit(perSecond))
	b.SetBurstAt(now, burst)
	return b
}

// Limits returns tenant's limits in force: its settings resolved against the boot defaults
// (settings.Limits.WithDefaults), so a zero query limit means no limit.
func (l *Limiter) Limits(tenant string) settings.Limits {
	var lim settings.Limits
	if t, ok := l.settings.Current().Tenant(tenant); ok {
		lim = t.Limits
	}
	return lim.WithDefaults(l.cfg.Defaults)
}

// AllowRequest charges one request to the tenant's and the key's request buckets.
func (l *Limiter) AllowRequest(ctx context.Context, tenant, keyID string) Decision {
	b := l.states(tenant, keyID)
	return l.counted(l.take(ctx, KindRequests, 1, b.tenantReq, b.keyReq))
}

// AllowRows charges n rows to the tenant's and the key's row buckets.
func (l *Limiter) AllowRows(ctx context.Context, tenant, keyID string, n int) Decision {
	b := l.states(tenant, keyID)
	return l.counted(l.take(ctx, KindRows, n, b.tenantRows, b.keyRows))
}

// take reserves n tokens from every non-nil bucket, all or none, waiting at most the allowed
// time.
func (l *Limiter) take(ctx context.Context, kind Kind, n int, buckets ...*rate.Limiter) Decision {
	now := l.now()
	d := Decision{Allowed: true, Kind: kind}
	var held []*rate.Reservation
	cancel := func() {
		for _, r := range held {
			r.CancelAt(now)
		}
	}
	var wait time.Duration
	budget := budget(ctx, l.cfg.MaxWait)
	for _, b := range buckets {
		if b == nil {
			continue
		}
		r := b.ReserveN(now, n)
		if !r.OK() {
			cancel()
			return Decision{Kind: kind, Limited: true, Limit: b.Burst(), Remaining: remaining(b, now),
				Reset: reset(b, now), Never: true}
		}
		delay := r.DelayFrom(now)
		if delay > budget {
			r.CancelAt(now)
			cancel()
			return Decision{Kind: kind, Limited: true, Limit: b.Burst(), Remaining: remaining(b, now),
				Reset: reset(b, now), RetryAfter: delay}
		}
		held = append(held, r)
		wait = max(wait, delay)
		if rem := remaining(b, now); !d.Limited || rem < d.Remaining {
			d.Limited, d.Limit, d.Remaining, d.Reset = true, b.Burst(), rem, reset(b, now)
		}
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			cancel()
			return Decision{Kind: kind, Limited: true, Limit: d.Limit, Remaining: 0, Reset: d.Reset, RetryAfter: wait}
		}
	}
	return d
}

// budget is how long a request may wait: at most maxWait, and not past its deadline. Deadlines
// are wall-clock times, so this uses the real clock, not the injected one.
func budget(ctx context.Context, maxWait time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		maxWait = min(maxWait, time.Until(dl))
	}
	return max(maxWait, 0)
}

func remaining(b *rate.Limiter, now time.Time) int {
	return max(0, int(math.Floor(b.TokensAt(now))))
}

func reset(b *rate.Limiter, now time.Time) time.Duration {
	missing := float64(b.Burst()) - b.TokensAt(now)
	if missing <= 0 || b.Limit() <= 0 {
		return 0
	}
	return time.Duration(missing / float64(b.Limit()) * float64(time.Second))
}

// AcquireQuery takes one of the tenant's concurrent-query slots, waiting at most QueryWait and
// never past ctx's deadline. When allowed, release must be called once the query ends (further
// calls do nothing); when refused, release is a no-op.
func (l *Limiter) AcquireQuery(ctx context.Context, tenant string) (release func(), d Decision) {
	sem := l.states(tenant, "").sem
	if sem == nil {
		return func() {}, Decision{Allowed: true, Kind: KindQueries}
	}
	size := cap(sem)
	acquired := func() (func(), Decision) {
		var once sync.Once
		return func() { once.Do(func() { <-sem }) },
			Decision{Allowed: true, Kind: KindQueries, Limited: true, Limit: size, Remaining: size - len(sem)}
	}
	select {
	case sem <- struct{}{}:
		return acquired()
	default:
	}
	refused := Decision{Kind: KindQueries, Limited: true, Limit: size, RetryAfter: time.Second}
	defer func() {
		if !d.Allowed {
			l.counted(d)
		}
	}()
	wait := budget(ctx, l.cfg.QueryWait)
	if wait <= 0 {
		return func() {}, refused
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case sem <- struct{}{}:
		return acquired()
	case <-t.C:
	case <-ctx.Done():
	}
	return func() {}, refused
}
