package console

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The metric families the console reads (docs/metrics.md). TestStatsMetricsAreDocumented keeps
// this list in step with the metrics reference.
const (
	mAccepted    = "wavehouse_ingest_rows_accepted_total"
	mInserted    = "wavehouse_ingest_rows_inserted_total"
	mRejected    = "wavehouse_ingest_rows_rejected_total"
	mBatchRows   = "wavehouse_ingest_batch_rows"
	mRequests    = "wavehouse_http_requests_total"
	mCacheHits   = "wavehouse_cache_hits_total"
	mCacheMisses = "wavehouse_cache_misses_total"
	mLag         = "wavehouse_mq_partition_lag_frames"
	mAckPending  = "wavehouse_mq_partition_ack_pending_frames"
	mOldest      = "wavehouse_mq_partition_oldest_unacked_seconds"
	mDLQ         = "wavehouse_mq_dlq_entries"
)

// readMetrics are the families a sample reads.
var readMetrics = []string{mAccepted, mInserted, mRejected, mBatchRows, mRequests, mCacheHits, mCacheMisses, mLag, mAckPending, mOldest, mDLQ}

// sample is the process's counters and gauges at one instant.
type sample struct {
	at time.Time
	// totals are counters, summed over their labels.
	accepted, inserted, rejected, inserts, insertRows, hits, misses float64
	requests                                                        map[string]float64 // by status class, API listener only
	// gauges.
	lag, unacked, oldest, dlq float64
	// tables are rows inserted per "tenant/table".
	tables map[string]float64
}

// Point is one point of the overview charts: rates over the interval that ends at T.
type Point struct {
	T              int64    `json:"t"` // unix milliseconds
	AcceptedPerSec float64  `json:"accepted_per_sec"`
	InsertedPerSec float64  `json:"inserted_per_sec"`
	RejectedPerSec float64  `json:"rejected_per_sec"`
	Requests2xx    float64  `json:"requests_2xx_per_sec"`
	Requests4xx    float64  `json:"requests_4xx_per_sec"`
	Requests5xx    float64  `json:"requests_5xx_per_sec"`
	InsertsPerSec  float64  `json:"inserts_per_sec"`
	RowsPerInsert  float64  `json:"rows_per_insert"`
	CacheHitRatio  *float64 `json:"cache_hit_ratio"` // nil when no lookup happened
	QueueLag       float64  `json:"queue_lag_frames"`
	QueueUnacked   float64  `json:"queue_unacked_frames"`
	OldestUnackedS float64  `json:"oldest_unacked_seconds"`
	DeadLetters    float64  `json:"dlq_entries"`
}

// Totals are the counters since the process started.
type Totals struct {
	Accepted float64            `json:"rows_accepted"`
	Inserted float64            `json:"rows_inserted"`
	Rejected float64            `json:"rows_rejected"`
	Inserts  float64            `json:"inserts"`
	Hits     float64            `json:"cache_hits"`
	Misses   float64            `json:"cache_misses"`
	Requests map[string]float64 `json:"requests"`
}

// Stats is the answer of GET /console/api/stats.
type Stats struct {
	At     int64   `json:"at"`
	Window float64 `json:"window_seconds"`
	Totals Totals  `json:"totals"`
	Series []Point `json:"series"`
	// TableRates are rows inserted per second per "tenant/table" over the last interval.
	TableRates map[string]float64 `json:"table_rates"`
	// LastInsert is when this process last saw rows inserted into "tenant/table" (unix ms).
	LastInsert map[string]int64 `json:"last_insert"`
}

// sampler keeps the recent samples of a metrics registry. Samples are taken when the console
// asks (at most one per minInterval), so a process nobody watches does no work; the charts'
// history starts when the first console opens.
type sampler struct {
	gather      prometheus.Gatherer
	now         func() time.Time
	minInterval time.Duration
	keep        int

	mu         sync.Mutex
	samples    []sample // oldest first, at most keep
	lastInsert map[string]time.Time
}

func newSampler(g prometheus.Gatherer, now func() time.Time, minInterval time.Duration, keep int) *sampler {
	return &sampler{gather: g, now: now, minInterval: minInterval, keep: keep, lastInsert: map[string]time.Time{}}
}

// stats samples the registry when the last sample is older than minInterval and returns the
// series.
func (s *sampler) stats() (Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if n := len(s.samples); n == 0 || now.Sub(s.samples[n-1].at) >= s.minInterval {
		cur, err := s.take(now)
		if err != nil {
			return Stats{}, err
		}
		if n > 0 {
			prev := s.samples[n-1]
			for k, v := range cur.tables {
				if v > prev.tables[k] {
					s.lastInsert[k] = now
				}
			}
		}
		s.samples = append(s.samples, cur)
		if len(s.samples) > s.keep {
			s.samples = s.samples[len(s.samples)-s.keep:]
		}
	}
	last := s.samples[len(s.samples)-1]
	out := Stats{At: last.at.UnixMilli(), Series: []Point{}, TableRates: map[string]float64{}, LastInsert: map[string]int64{},
		Totals: Totals{Accepted: last.accepted, Inserted: last.inserted, Rejected: last.rejected, Inserts: last.inserts,
			Hits: last.hits, Misses: last.misses, Requests: last.requests}}
	for i := 1; i < len(s.samples); i++ {
		out.Series = append(out.Series, rates(s.samples[i-1], s.samples[i]))
	}
	if n := len(s.samples); n > 1 {
		prev := s.samples[n-2]
		dt := last.at.Sub(prev.at).Seconds()
		out.Window = last.at.Sub(s.samples[0].at).Seconds()
		for k, v := range last.tables {
			out.TableRates[k] = delta(prev.tables[k], v) / dt
		}
	}
	for k, t := range s.lastInsert {
		out.LastInsert[k] = t.UnixMilli()
	}
	return out, nil
}

// rates turns two consecutive samples into a chart point.
func rates(a, b sample) Point {
	dt := b.at.Sub(a.at).Seconds()
	per := func(x, y float64) float64 { return round(delta(x, y) / dt) }
	p := Point{T: b.at.UnixMilli(),
		AcceptedPerSec: per(a.accepted, b.accepted), InsertedPerSec: per(a.inserted, b.inserted), RejectedPerSec: per(a.rejected, b.rejected),
		Requests2xx: per(a.requests["2xx"], b.requests["2xx"]), Requests4xx: per(a.requests["4xx"], b.requests["4xx"]),
		Requests5xx: per(a.requests["5xx"], b.requests["5xx"]), InsertsPerSec: per(a.inserts, b.inserts),
		QueueLag: b.lag, QueueUnacked: b.unacked, OldestUnackedS: round(b.oldest), DeadLetters: b.dlq}
	if n := delta(a.inserts, b.inserts); n > 0 {
		p.RowsPerInsert = round(delta(a.insertRows, b.insertRows) / n)
	}
	if looks := delta(a.hits, b.hits) + delta(a.misses, b.misses); looks > 0 {
		r := round(delta(a.hits, b.hits) / looks)
		p.CacheHitRatio = &r
	}
	return p
}

// delta is a counter's increase; a counter that went down restarted, and counts from zero.
func delta(from, to float64) float64 {
	if to < from {
		return to
	}
	return to - from
}

func round(x float64) float64 { return math.Round(x*1000) / 1000 }

// take reads one sample from the registry.
func (s *sampler) take(now time.Time) (sample, error) {
	fams, err := s.gather.Gather()
	if err != nil && len(fams) == 0 {
		return sample{}, fmt.Errorf("console: gather metrics: %w", err)
	}
	out := sample{at: now, requests: map[string]float64{}, tables: map[string]float64{}}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case mAccepted:
				out.accepted += m.GetCounter().GetValue()
			case mRejected:
				out.rejected += m.GetCounter().GetValue()
			case mInserted:
				v := m.GetCounter().GetValue()
				out.inserted += v
				out.tables[label(m, "tenant")+"/"+label(m, "table")] += v
			case mBatchRows:
				out.inserts += float64(m.GetHistogram().GetSampleCount())
				out.insertRows += m.GetHistogram().GetSampleSum()
			case mRequests:
				if label(m, "listener") == "api" {
					out.requests[label(m, "status_class")] += m.GetCounter().GetValue()
				}
			case mCacheHits:
				out.hits += m.GetCounter().GetValue()
			case mCacheMisses:
				out.misses += m.GetCounter().GetValue()
			case mLag:
				out.lag += m.GetGauge().GetValue()
			case mAckPending:
				out.unacked += m.GetGauge().GetValue()
			case mOldest:
				out.oldest = math.Max(out.oldest, m.GetGauge().GetValue())
			case mDLQ:
				out.dlq += m.GetGauge().GetValue()
			}
		}
	}
	return out, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
