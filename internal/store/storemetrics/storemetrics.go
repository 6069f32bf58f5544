// Package storemetrics wraps a store.Store with Prometheus metrics: inserted rows and bytes and
// insert duration by table and outcome, query duration by outcome, and errors by operation and
// class. Outcomes are the store.Class names ("none" is reported as "ok").
package storemetrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/store"
)

// Store is a store.Store that records metrics around another.
type Store struct {
	next store.Store

	insertRows     *prometheus.CounterVec
	insertBytes    *prometheus.CounterVec
	insertDuration *prometheus.HistogramVec
	queryDuration  *prometheus.HistogramVec
	errs           *prometheus.CounterVec
}

var _ store.Store = (*Store)(nil)

// Wrap registers the metrics with reg and returns next wrapped.
func Wrap(next store.Store, reg prometheus.Registerer) (*Store, error) {
	s := &Store{
		next: next,
		insertRows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_store_insert_rows_total", Help: "Rows in insert batches, by table and outcome.",
		}, []string{"table", "outcome"}),
		insertBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_store_insert_bytes_total", Help: "Row bytes in insert batches (RowBinary; canonical JSON for version 1 backlogs), by table and outcome.",
		}, []string{"table", "outcome"}),
		insertDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "wavehouse_store_insert_duration_seconds", Help: "Insert latency, by table and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"table", "outcome"}),
		queryDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "wavehouse_store_query_duration_seconds", Help: "Query latency from start to the rows being closed, by outcome.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"outcome"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_store_errors_total", Help: "Store errors by operation and class.",
		}, []string{"op", "class"}),
	}
	for _, c := range []prometheus.Collector{s.insertRows, s.insertBytes, s.insertDuration, s.queryDuration, s.errs} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func outcome(err error) string {
	c := store.Classify(err)
	if c == store.ClassNone {
		return "ok"
	}
	return c.String()
}

func (s *Store) count(op string, err error) error {
	if err != nil {
		s.errs.WithLabelValues(op, store.Classify(err).String()).Inc()
	}
	return err
}

// Insert records rows, bytes and duration of the batch.
func (s *Store) Insert(ctx context.Context, b store.Batch) error {
	start := time.Now()
	err := s.next.Insert(ctx, b)
	o := outcome(err)
	s.insertRows.WithLabelValues(b.Table, o).Add(float64(b.Len()))
	s.insertBytes.WithLabelValues(b.Table, o).Add(float64(b.Bytes()))
	s.insertDuration.WithLabelValues(b.Table, o).Observe(time.Since(start).Seconds())
	return s.count("insert", err)
}

// Query records the query's duration when its rows are closed.
func (s *Store) Query(ctx context.Context, target store.Target, q store.Query) (store.Rows, error) {
	start := time.Now()
	r, err := s.next.Query(ctx, target, q)
	if err != nil {
		s.queryDuration.WithLabelValues(outcome(err)).Observe(time.Since(start).Seconds())
		return nil, s.count("query", err)
	}
	return &rows{Rows: r, s: s, start: start}, nil
}

// Columns passes through, counting errors (a missing table is not an error of the store).
func (s *Store) Columns(ctx context.Context, target store.Target, table string) ([]store.Column, error) {
	cols, err := s.next.Columns(ctx, target, table)
	if err != nil && !errors.Is(err, store.ErrUnknownTable) {
		s.count("schema", err)
	}
	return cols, err
}

// Exec passes through, counting errors.
func (s *Store) Exec(ctx context.Context, target store.Target, sql string) error {
	return s.count("exec", s.next.Exec(ctx, target, sql))
}

// Ping passes through, counting errors.
func (s *Store) Ping(ctx context.Context, target store.Target) error {
	return s.count("ping", s.next.Ping(ctx, target))
}

// Close closes the wrapped store.
func (s *Store) Close(ctx context.Context) error { return s.next.Close(ctx) }

// Capabilities forwards to the wrapped store when it reports capabilities.
func (s *Store) Capabilities(ctx context.Context, target store.Target) (store.Capabilities, error) {
	if cr, ok := s.next.(store.CapabilityReporter); ok {
		return cr.Capabilities(ctx, target)
	}
	return store.Capabilities{}, nil
}

type rows struct {
	store.Rows
	s      *Store
	start  time.Time
	closed bool
}

func (r *rows) Close() error {
	err := r.Rows.Close()
	if !r.closed {
		r.closed = true
		qerr := r.Rows.Err()
		if qerr == nil {
			qerr = err
		}
		r.s.queryDuration.WithLabelValues(outcome(qerr)).Observe(time.Since(r.start).Seconds())
		r.s.count("query", qerr)
	}
	return err
}

// InsertDeduplicated forwards to the wrapped store when it reports insert deduplication;
// otherwise inserts are not known to be deduplicated.
func (s *Store) InsertDeduplicated(ctx context.Context, target store.Target, table string) (bool, error) {
	if dr, ok := s.next.(store.DedupReporter); ok {
		return dr.InsertDeduplicated(ctx, target, table)
	}
	return false, nil
}
