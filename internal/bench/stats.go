package bench

import (
	"math"
	"slices"
	"time"
)

// Latency summarises a set of latency samples.
type Latency struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50"`
	P95   time.Duration `json:"p95"`
	P99   time.Duration `json:"p99"`
	Max   time.Duration `json:"max"`
	Mean  time.Duration `json:"mean"`
}

// Summarize sorts samples in place and returns their percentiles. Percentiles use the
// nearest-rank method: Pq is the smallest sample such that at least q% of samples are ≤ it.
func Summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	return Latency{
		Count: len(samples),
		P50:   Percentile(samples, 50),
		P95:   Percentile(samples, 95),
		P99:   Percentile(samples, 99),
		Max:   samples[len(samples)-1],
		Mean:  sum / time.Duration(len(samples)),
	}
}

// Percentile returns the nearest-rank q-th percentile (0 < q ≤ 100) of sorted samples, or 0 when
// there are none.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// rank = ceil(q/100 * n); the epsilon keeps exact ranks (q=50, n=10 → 5) from rounding up.
	rank := int(math.Ceil(q/100*float64(n) - 1e-9))
	if rank < 1 {
		rank = 1
	}
	if rank > n {
		rank = n
	}
	return sorted[rank-1]
}

// Mark is one point of the accepted-rows timeline: by At, Rows rows had been accepted.
type Mark struct {
	At   time.Time
	Rows int64
}

// Freshness computes, for every accepted mark, how long after it the queryable count first
// reached the mark's row count. accepted and queryable must both be in time order with
// non-decreasing Rows. Marks never reached are returned in unreached.
func Freshness(accepted, queryable []Mark) (delays []time.Duration, unreached int) {
	j := 0
	for _, m := range accepted {
		if m.Rows == 0 {
			continue
		}
		for j < len(queryable) && queryable[j].Rows < m.Rows {
			j++
		}
		if j == len(queryable) {
			unreached++
			continue
		}
		delays = append(delays, max(queryable[j].At.Sub(m.At), 0))
	}
	return delays, unreached
}
