package api

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests     *prometheus.HistogramVec
	rowsAccepted prometheus.Counter
	rowsRejected prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "wavehouse_ingest_request_duration_seconds", Help: "Ingest request latency by outcome (accepted, replayed, rejected, limited, error).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"outcome"}),
		rowsAccepted: prometheus.NewCounter(prometheus.CounterOpts{Name: "wavehouse_ingest_rows_accepted_total", Help: "Rows accepted into the queue."}),
		rowsRejected: prometheus.NewCounter(prometheus.CounterOpts{Name: "wavehouse_ingest_rows_rejected_total", Help: "Rows refused by validation."}),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.requests, m.rowsAccepted, m.rowsRejected} {
		errs = append(errs, reg.Register(c))
	}
	return m, errors.Join(errs...)
}

func (m *metrics) observeIngest(outcome string, start time.Time) {
	m.requests.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
}
