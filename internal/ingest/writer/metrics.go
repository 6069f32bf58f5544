package writer

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the ingest role's instruments. Table labels are bounded by the tables tenants
// own; no label carries request data.
type Metrics struct {
	batchRows      prometheus.Histogram
	insertDuration *prometheus.HistogramVec
	rowsInserted   *prometheus.CounterVec
	deadLettered   *prometheus.CounterVec
	retries        *prometheus.CounterVec
	fetchErrors    prometheus.Counter
	settleFailures *prometheus.CounterVec
	inDoubt        *prometheus.CounterVec
	tableDedup     *prometheus.GaugeVec
	// redeliveredHeld counts deliveries of frames the writer still held (dropped).
	redeliveredHeld prometheus.Counter
	// progress counts in-progress reports of held frames.
	progress    prometheus.Counter
	emptyFrames prometheus.Counter
}

// NewMetrics creates the instruments and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		batchRows: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "wavehouse_ingest_batch_rows", Help: "Rows per insert batch.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10),
		}),
		insertDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "wavehouse_ingest_insert_duration_seconds", Help: "Duration of a batch insert, by outcome class.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"outcome"}),
		rowsInserted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_ingest_rows_inserted_total", Help: "Rows inserted into ClickHouse.",
		}, []string{"tenant", "table"}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_ingest_dead_lettered_total", Help: "Records moved to the dead-letter queue, by reason code.",
		}, []string{"tenant", "table", "code"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_ingest_retries_total", Help: "Batches handed back to the queue for a later retry, by reason.",
		}, []string{"reason"}),
		fetchErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wavehouse_ingest_fetch_errors_total", Help: "Failed pulls from the queue.",
		}),
		settleFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_ingest_settle_failures_total",
			Help: "Failed acks, naks and dead-letterings, by operation; each leaves a frame to be redelivered after the ack wait.",
		}, []string{"op"}),
		inDoubt: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_ingest_in_doubt_batches_total",
			Help: "Redelivered frames whose batch may already have been inserted, by outcome: already_inserted (acknowledged without inserting), " +
				"reinserted_deduplicated, reinserted_not_deduplicated (rows may be twice), claimed_elsewhere, unrecoverable.",
		}, []string{"outcome"}),
		tableDedup: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "wavehouse_ingest_table_insert_dedup",
			Help: "1 when inserts into the table are deduplicated by token (exactly once across crashes), 0 when they are not.",
		}, []string{"tenant", "table"}),
		redeliveredHeld: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wavehouse_ingest_redelivered_while_held_total",
			Help: "Frames the queue delivered again while this writer still held them unsettled (dropped: the held copy settles them). Non-zero means held frames outlived the ack wait.",
		}),
		progress: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wavehouse_ingest_in_progress_reports_total",
			Help: "In-progress reports sent for held frames, which keep them from being redelivered while they wait for their insert.",
		}),
		emptyFrames: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wavehouse_ingest_empty_frames_total",
			Help: "Frames that carried no record, acknowledged without an insert (nothing to insert or dead-letter).",
		}),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.batchRows, m.insertDuration, m.rowsInserted, m.deadLettered, m.retries, m.fetchErrors, m.settleFailures, m.inDoubt, m.tableDedup, m.redeliveredHeld, m.progress, m.emptyFrames} {
		errs = append(errs, reg.Register(c))
	}
	return m, errors.Join(errs...)
}
