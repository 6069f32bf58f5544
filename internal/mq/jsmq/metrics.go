package jsmq

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the queue's publish-path metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	publishSeconds *prometheus.HistogramVec
	frameRecords   prometheus.Histogram
	frameBytes     prometheus.Histogram
	undecodable    *prometheus.CounterVec
	claims         *prometheus.CounterVec
}

// NewMetrics returns unregistered metrics; Register adds them and the
// queue's scrape-time collector to a registry.
func NewMetrics() *Metrics {
	return &Metrics{
		publishSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wavehouse_mq_publish_duration_seconds",
			Help:    "Time until a publish was durable (or failed), by outcome.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"outcome"}),
		frameRecords: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wavehouse_mq_frame_records",
			Help:    "Records (requests) per stored frame, i.e. per fsync under sync=always.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}),
		frameBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wavehouse_mq_frame_bytes",
			Help:    "Encoded bytes per stored frame.",
			Buckets: prometheus.ExponentialBuckets(256, 4, 9),
		}),
		undecodable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_mq_undecodable_total",
			Help: "Stored messages on ingest subjects that were not decodable frames, dead-lettered with their raw bytes (code undecodable), by partition.",
		}, []string{"partition"}),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_mq_claims_total",
			Help: "Idempotency claims of keyed records in shared frames, by outcome: marked (marked with their frame's id before it was published), mark_failed (left out of the frame), prior_found (an earlier attempt's frame holds the request: not published again), prior_fenced (it does not: fenced off, published anew).",
		}, []string{"outcome"}),
	}
}

func (m *Metrics) observeMarked(marked, failed int) {
	if m == nil {
		return
	}
	m.claims.WithLabelValues("marked").Add(float64(marked))
	m.claims.WithLabelValues("mark_failed").Add(float64(failed))
}

func (m *Metrics) observeResolve(found bool) {
	if m == nil {
		return
	}
	outcome := "prior_fenced"
	if found {
		outcome = "prior_found"
	}
	m.claims.WithLabelValues(outcome).Inc()
}

func (m *Metrics) observeUndecodable(p int) {
	if m == nil {
		return
	}
	m.undecodable.WithLabelValues(strconv.Itoa(p)).Inc()
}

func (m *Metrics) observePublish(start time.Time, err error) {
	if m == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.publishSeconds.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
}

func (m *Metrics) observeFrame(records, bytes int) {
	if m == nil {
		return
	}
	m.frameRecords.Observe(float64(records))
	m.frameBytes.Observe(float64(bytes))
}

// Register registers m and a scrape-time collector of q's partition depth,
// consumer lag, ack-pending, oldest-unacked age, DLQ size and connection
// state with reg.
func (m *Metrics) Register(reg prometheus.Registerer, q *Queue) error {
	return errors.Join(
		reg.Register(m.publishSeconds),
		reg.Register(m.frameRecords),
		reg.Register(m.frameBytes),
		reg.Register(m.undecodable),
		reg.Register(m.claims),
		reg.Register(&collector{q: q}),
	)
}

var (
	descRetained = prometheus.NewDesc("wavehouse_mq_partition_frames",
		"Frames retained in the partition stream (acknowledged or not, until trimmed).", []string{"partition"}, nil)
	descPending = prometheus.NewDesc("wavehouse_mq_partition_lag_frames",
		"Frames not yet delivered to the ingest consumer.", []string{"partition"}, nil)
	descAckPending = prometheus.NewDesc("wavehouse_mq_partition_ack_pending_frames",
		"Frames delivered but not yet acknowledged.", []string{"partition"}, nil)
	descOldest = prometheus.NewDesc("wavehouse_mq_partition_oldest_unacked_seconds",
		"Age of the oldest frame above the ack floor (0 when none).", []string{"partition"}, nil)
	descDLQ = prometheus.NewDesc("wavehouse_mq_dlq_entries",
		"Entries in the dead-letter queue.", nil, nil)
	descConn = prometheus.NewDesc("wavehouse_mq_connected",
		"1 when the queue's NATS connection is connected.", nil, nil)
	descTenantQueued = prometheus.NewDesc("wavehouse_mq_tenant_queued_bytes",
		"Record bytes of a tenant in the queue not yet acknowledged by the ingest consumer, as this process charges them to the tenant's budget; only for tenants with bytes queued, on a queue with tenant budgets (mq.embedded).",
		[]string{"tenant"}, nil)
	descTenantBudget = prometheus.NewDesc("wavehouse_mq_tenant_budget_bytes",
		"The queue byte budget of a tenant with bytes queued (queue_max_bytes in the tenant's settings file, else mq.embedded.tenant_max_bytes); 0 when the tenant is unlimited. Publishes beyond it answer 429 ingest.queue_full.",
		[]string{"tenant"}, nil)
)

// collector reads queue state from the server at scrape time. Labels are
// bounded: partitions only (per-table figures come from Stats).
type collector struct{ q *Queue }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRetained, descPending, descAckPending, descOldest, descDLQ, descConn, descTenantQueued, descTenantBudget} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	q := c.q
	connected := 0.0
	if q.nc.Status() == nats.CONNECTED && !q.isClosed() {
		connected = 1
	}
	ch <- prometheus.MustNewConstMetric(descConn, prometheus.GaugeValue, connected)
	c.collectBudgets(ch)
	if connected == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for p := 0; p < q.Partitions(); p++ {
		label := strconv.Itoa(p)
		s, err := q.js.Stream(ctx, q.names.Stream(p))
		if err != nil {
			continue
		}
		info := s.CachedInfo()
		ch <- prometheus.MustNewConstMetric(descRetained, prometheus.GaugeValue, float64(info.State.Msgs), label)
		cons, err := s.Consumer(ctx, ConsumerName)
		if err != nil {
			continue
		}
		ci := cons.CachedInfo()
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(ci.NumPending), label)
		ch <- prometheus.MustNewConstMetric(descAckPending, prometheus.GaugeValue, float64(ci.NumAckPending), label)
		age := 0.0
		if raw, err := s.GetMsg(ctx, ci.AckFloor.Stream+1, jetstream.WithGetMsgSubject(q.names.StreamSubjects(p))); err == nil {
			age = max(q.now().Sub(raw.Time).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, age, label)
	}
	if s, err := q.js.Stream(ctx, q.names.DLQStream()); err == nil {
		ch <- prometheus.MustNewConstMetric(descDLQ, prometheus.GaugeValue, float64(s.CachedInfo().State.Msgs))
	}
}

// collectBudgets reports the bytes each tenant has charged to its budget, and that budget. The
// budget is read outside the queue's lock: it may consult the settings.
func (c *collector) collectBudgets(ch chan<- prometheus.Metric) {
	q := c.q
	if !q.budgeting() {
		return
	}
	q.mu.Lock()
	queued := make(map[string]int64, len(q.budget))
	for tenant, n := range q.budget {
		queued[tenant] = n
	}
	q.mu.Unlock()
	for tenant, n := range queued {
		ch <- prometheus.MustNewConstMetric(descTenantQueued, prometheus.GaugeValue, float64(n), tenant)
		ch <- prometheus.MustNewConstMetric(descTenantBudget, prometheus.GaugeValue, float64(max(q.budgetOf(tenant), 0)), tenant)
	}
}
