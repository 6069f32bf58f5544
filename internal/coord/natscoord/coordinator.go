// Package natscoord implements coord.Coordinator over a NATS JetStream KV
// bucket (coord.backend: nats). Each lease is one key; the fencing token of
// a term is the KV revision of the Create or Update that started it.
//
// A holder renews with a compare-and-set Update every RenewInterval and
// steps down on its own once Lease - SafetyMargin has passed since it sent
// its last successful renewal. A candidate takes a lease over only after it
// has seen the same revision for a full Lease on its own monotonic clock, and
// then only with a compare-and-set on that revision. Clocks are never
// compared across hosts; see docs/coord.md for the timing argument.
package natscoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/wavehouse/wavehouse/internal/coord"
)

// Deps are the collaborators of a Coordinator.
type Deps struct {
	// JetStream is the handle on the mq.nats connection. Required.
	JetStream jetstream.JetStream
	// Clock measures lease timing. It must be monotonic (the real clock is).
	// Default coord.SystemClock().
	Clock coord.Clock
	// Instance identifies this coordinator as a holder. Default
	// coord.DefaultInstance().
	Instance string
	// Logger receives renewal failures. Default: discarded.
	Logger *slog.Logger
}

// Coordinator grants leases recorded in a JetStream KV bucket.
type Coordinator struct {
	cfg      Config
	js       jetstream.JetStream
	clock    coord.Clock
	instance string
	log      *slog.Logger

	initMu sync.Mutex
	kv     jetstream.KeyValue

	mu       sync.Mutex
	closed   bool
	terms    map[string]*term       // this coordinator's latest term per name
	observed map[string]observation // other holders' revisions as first seen
	wg       sync.WaitGroup         // term renewal loops
}

// observation is when this coordinator first saw a lease at a revision.
type observation struct {
	rev   uint64
	since time.Time
}

// record is the value stored under a lease key.
type record struct {
	Holder string `json:"holder"`
	// Token is the term's fencing token. It is zero in the write that
	// starts a term, whose own revision is the token, and set by renewals.
	Token uint64 `json:"token,omitempty"`
}

var (
	_ coord.Coordinator  = (*Coordinator)(nil)
	_ coord.HolderReader = (*Coordinator)(nil)
)

// New returns a coordinator. It starts no goroutines and does no I/O; the
// bucket is looked up (or created) by Init or on first use.
func New(cfg Config, deps Deps) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.JetStream == nil {
		return nil, errors.New("natscoord: Deps.JetStream is required")
	}
	if deps.Clock == nil {
		deps.Clock = coord.SystemClock()
	}
	if deps.Instance == "" {
		deps.Instance = coord.DefaultInstance()
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg = cfg.withDefaults()
	return &Coordinator{
		cfg:      cfg,
		js:       deps.JetStream,
		clock:    deps.Clock,
		instance: deps.Instance,
		log:      deps.Logger.With("component", "coord", "bucket", cfg.Bucket),
		terms:    make(map[string]*term),
		observed: make(map[string]observation),
	}, nil
}

// Instance returns the identity this coordinator holds leases under.
func (c *Coordinator) Instance() string { return c.instance }

// Init looks up the lease bucket, creating it when Config.Manage is set. It
// is called on first use; calling it at boot reports a missing bucket early.
func (c *Coordinator) Init(ctx context.Context) error {
	_, err := c.bucket(ctx)
	return err
}

func (c *Coordinator) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	c.initMu.Lock()
	defer c.initMu.Unlock()
	if c.kv != nil {
		return c.kv, nil
	}
	var (
		kv  jetstream.KeyValue
		err error
	)
	if c.cfg.Manage {
		kv, err = c.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      c.cfg.Bucket,
			Description: "WaveHouse coordination leases",
			History:     1,
			Storage:     jetstream.FileStorage,
			Replicas:    c.cfg.Replicas,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = c.js.KeyValue(ctx, c.cfg.Bucket)
		}
	} else {
		kv, err = c.js.KeyValue(ctx, c.cfg.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, fmt.Errorf("%w: lease bucket %q does not exist: create it (wavehouse mq manifests lists it) or set mq.nats.manage_topology: true: %w", coord.ErrUnavailable, c.cfg.Bucket, err)
		}
	}
	if err != nil {
		return nil, translate(ctx, err)
	}
	c.kv = kv
	return kv, nil
}

// TryAcquire implements coord.Coordinator.
func (c *Coordinator) TryAcquire(ctx context.Context, name string) (coord.Term, error) {
	if err := coord.ValidateName(name); err != nil {
		return nil, fmt.Errorf("%w: %q", err, name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	closed, own := c.closed, c.terms[name]
	c.mu.Unlock()
	if closed {
		return nil, coord.ErrClosed
	}
	if own != nil && own.Err() == nil {
		return nil, fmt.Errorf("%w: %q by this coordinator (%s)", coord.ErrHeld, name, c.instance)
	}
	kv, err := c.bucket(ctx)
	if err != nil {
		return nil, err
	}

	cur, found, err := c.readLatest(ctx, name)
	seen := c.clock.Now()
	if err != nil {
		return nil, translate(ctx, err)
	}
	var (
		rev  uint64
		sent time.Time
	)
	switch {
	case !found:
		// Never taken: create it.
		rev, sent, err = c.write(ctx, func(ctx context.Context) (uint64, error) {
			return kv.Create(ctx, name, encode(record{Holder: c.instance}))
		})
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("%w: %q was taken concurrently", coord.ErrHeld, name)
		}
	case cur.deleted:
		// Resigned: take it at once, over the delete marker.
		rev, sent, err = c.write(ctx, func(ctx context.Context) (uint64, error) {
			return kv.Update(ctx, name, encode(record{Holder: c.instance}), cur.rev)
		})
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return nil, fmt.Errorf("%w: %q was taken concurrently", coord.ErrHeld, name)
		}
	default:
		holder := decode(cur.value).Holder
		if !c.stale(name, cur.rev, seen) {
			return nil, fmt.Errorf("%w: %q by %s", coord.ErrHeld, name, holder)
		}
		// The holder has not renewed for a full lease on our clock, so by
		// now it has stepped down; the CAS fails if it renewed meanwhile.
		rev, sent, err = c.write(ctx, func(ctx context.Context) (uint64, error) {
			return kv.Update(ctx, name, encode(record{Holder: c.instance}), cur.rev)
		})
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return nil, fmt.Errorf("%w: %q by %s (renewed or taken concurrently)", coord.ErrHeld, name, holder)
		}
	}
	if err != nil {
		return nil, translate(ctx, err)
	}
	return c.start(ctx, kv, name, rev, sent)
}

// stale records that the lease was seen at rev at time seen, and reports
// whether it has been seen at that same revision for a full lease.
func (c *Coordinator) stale(name string, rev uint64, seen time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	obs, ok := c.observed[name]
	if !ok || obs.rev != rev {
		c.observed[name] = observation{rev: rev, since: seen}
		return false
	}
	return seen.Sub(obs.since) >= c.cfg.Lease
}

// start registers a term won at rev and starts its renewal loop.
func (c *Coordinator) start(ctx context.Context, kv jetstream.KeyValue, name string, rev uint64, sent time.Time) (coord.Term, error) {
	c.mu.Lock()
	delete(c.observed, name)
	if c.closed {
		c.mu.Unlock()
		// Closed while acquiring: give the lease straight back.
		_ = c.del(ctx, kv, name, jetstream.LastRevision(rev))
		return nil, coord.ErrClosed
	}
	t := newTerm(c, kv, name, rev, sent)
	c.terms[name] = t
	c.wg.Go(t.run)
	c.mu.Unlock()
	return t, nil
}

// Holder implements coord.HolderReader. It reports the last holder recorded
// in the bucket, which may have stopped renewing without being taken over.
func (c *Coordinator) Holder(ctx context.Context, name string) (coord.Lease, bool, error) {
	if err := coord.ValidateName(name); err != nil {
		return coord.Lease{}, false, fmt.Errorf("%w: %q", err, name)
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return coord.Lease{}, false, coord.ErrClosed
	}
	if _, err := c.bucket(ctx); err != nil {
		return coord.Lease{}, false, err
	}
	cur, found, err := c.readLatest(ctx, name)
	if err != nil {
		return coord.Lease{}, false, translate(ctx, err)
	}
	if !found || cur.deleted {
		return coord.Lease{}, false, nil
	}
	rec := decode(cur.value)
	return coord.Lease{Name: name, Holder: rec.Holder, Token: tokenOf(rec, cur.rev)}, true, nil
}

// Close implements coord.Coordinator: it resigns every live term, waits for
// the renewal loops to stop, and returns the resignations that failed (those
// leases expire after the lease duration).
func (c *Coordinator) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	terms := make([]*term, 0, len(c.terms))
	for _, t := range c.terms {
		terms = append(terms, t)
	}
	c.mu.Unlock()
	var errs []error
	for _, t := range terms {
		if err := t.Resign(ctx); err != nil {
			errs = append(errs, fmt.Errorf("resign %q: %w", t.name, err))
		}
	}
	c.wg.Wait()
	return errors.Join(errs...)
}

func encode(r record) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		// A struct of a string and an integer always marshals.
		return []byte(`{}`)
	}
	return b
}

// decode reads a lease record; a foreign value yields an unnamed holder.
func decode(b []byte) record {
	var r record
	if json.Unmarshal(b, &r) != nil || r.Holder == "" {
		r.Holder = "unknown"
	}
	return r
}

// tokenOf returns the fencing token recorded at revision rev.
func tokenOf(r record, rev uint64) uint64 {
	if r.Token == 0 {
		return rev
	}
	return r.Token
}

// translate maps an SDK error to the layer's sentinels, keeping the cause;
// a context error of the call stays recognisable too.
func translate(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("%w: %w: nats: %w", coord.ErrUnavailable, ctxErr, err)
	}
	return fmt.Errorf("%w: nats: %w", coord.ErrUnavailable, err)
}
