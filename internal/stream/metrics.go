package stream

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the stream's Prometheus series. No label has unbounded
// cardinality: tables and tenants are not labels.
type metrics struct {
	subscribers prometheus.Gauge
	readers     prometheus.Gauge
	events      *prometheus.CounterVec
	rowsEvents  prometheus.Counter
	rows        prometheus.Counter
	bytes       prometheus.Counter
	replayed    prometheus.Counter
	gaps        prometheus.Counter
	disconnects *prometheus.CounterVec
	rejected    *prometheus.CounterVec
	latency     prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		subscribers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wavehouse_stream_subscribers", Help: "Open SSE streams in this process.",
		}),
		readers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wavehouse_stream_queue_readers", Help: "Queue readers feeding SSE streams (one shared per live table, one per resuming stream).",
		}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_stream_events_sent_total", Help: "SSE events written, by event type (rows, reset, gap).",
		}, []string{"event"}),
		rows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wavehouse_stream_rows_sent_total", Help: "Rows written to SSE streams (one per row per subscriber).",
		}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wavehouse_stream_bytes_sent_total", Help: "Bytes written to SSE streams.",
		}),
		replayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wavehouse_stream_replayed_events_total", Help: "Row events sent from retained history (accepted before the stream started).",
		}),
		gaps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wavehouse_stream_gaps_total", Help: "Gaps opened for slow subscribers under slow_policy gap.",
		}),
		disconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_stream_disconnects_total", Help: "Streams ended by the server, by reason (slow, queue, shutdown, write).",
		}, []string{"reason"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_stream_rejected_total", Help: "Stream requests refused, by reason (limit, invalid, closed).",
		}, []string{"reason"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "wavehouse_stream_delivery_latency_seconds", Help: "Time from ingest acceptance to the live event being written to the subscriber.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
	}
	m.rowsEvents = m.events.WithLabelValues("rows")
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.subscribers, m.readers, m.events, m.rows, m.bytes, m.replayed, m.gaps, m.disconnects, m.rejected, m.latency} {
		errs = append(errs, reg.Register(c))
	}
	return m, errors.Join(errs...)
}
