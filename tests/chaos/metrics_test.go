package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// Series the suite reads from /metrics.
const (
	metricLag        = "wavehouse_mq_partition_lag_frames"
	metricAckPending = "wavehouse_mq_partition_ack_pending_frames"
	metricDLQ        = "wavehouse_mq_dlq_entries"
	metricInDoubt    = "wavehouse_ingest_in_doubt_batches_total"
	metricTableDedup = "wavehouse_ingest_table_insert_dedup"
	metricReserve    = "wavehouse_dedupe_reserve_total"
)

// drainTimeout bounds the wait for the queue to drain at the end of a scenario: a killed ingest
// process's deliveries come back after mq.ack_wait (30 s), and a backlog must then insert.
const drainTimeout = 4 * time.Minute

// metrics is one scrape: every sample by its series (name{labels}).
type metrics map[string]float64

// scrape reads the ops listener's /metrics.
func scrape(ctx context.Context, ops string) (metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ops+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	// No keep-alive: a scrape leaves no connection (nor goroutine) behind across kills.
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("/metrics answered %d", resp.StatusCode)
	}
	m := metrics{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// series returns the samples of metric name whose labels include every label=value pair of
// match (name alone: match empty).
func (m metrics) series(name string, match ...string) map[string]float64 {
	out := map[string]float64{}
	for s, v := range m {
		base, labels, _ := strings.Cut(s, "{")
		if base != name {
			continue
		}
		ok := true
		for _, kv := range match {
			k, val, _ := strings.Cut(kv, "=")
			if !strings.Contains(labels, fmt.Sprintf("%s=%q", k, val)) {
				ok = false
			}
		}
		if ok {
			out[s] = v
		}
	}
	return out
}

// sum adds the samples of series.
func (m metrics) sum(name string, match ...string) float64 {
	var n float64
	for _, v := range m.series(name, match...) {
		n += v
	}
	return n
}

// drained reports whether a scrape shows no frame left to deliver or to acknowledge in any
// partition.
func (m metrics) drained() bool {
	return len(m.series(metricLag)) > 0 && len(m.series(metricAckPending)) > 0 &&
		m.sum(metricLag) == 0 && m.sum(metricAckPending) == 0
}

// waitDrained polls the process at ops until the queue it sees has drained, at most
// drainTimeout, and returns the last scrape and whether it drained. A queue that does not drain
// is a finding to report with what is counted, not a reason to stop before counting.
func waitDrained(t *testing.T, ops string) (metrics, bool) {
	t.Helper()
	var last metrics
	ok := poll.Within(t, drainTimeout, func() bool {
		m, err := scrape(t.Context(), ops)
		if err != nil { // the process is still starting
			return false
		}
		last = m
		return m.drained()
	})
	return last, ok
}

// inDoubt accumulates wavehouse_ingest_in_doubt_batches_total of one ingest process across its
// lives from the moment it is created: a counter restarts at 0 with each start, so bank scrapes
// it just before a kill and adds what that life counted; what the running life had counted
// before (an earlier scenario on the same process) is subtracted.
type inDoubt struct {
	ops    string
	metric string // the counter, by outcome: metricInDoubt unless newOutcomes says otherwise

	mu     sync.Mutex
	banked map[string]float64 // outcome → sum over ended lives, less base
}

func newInDoubt(ctx context.Context, ops string) *inDoubt {
	return newOutcomes(ctx, ops, metricInDoubt)
}

// newOutcomes is an inDoubt over another counter with an outcome label: the api process's
// metricReserve, whose "mark_lapsed" explains a keyed request enqueued twice.
func newOutcomes(ctx context.Context, ops, metric string) *inDoubt {
	d := &inDoubt{ops: ops, metric: metric, banked: map[string]float64{}}
	for o, v := range d.outcomes(ctx) {
		d.banked[o] = -v
	}
	return d
}

// outcomes scrapes the running life's counter by outcome.
func (d *inDoubt) outcomes(ctx context.Context) map[string]float64 {
	m, err := scrape(ctx, d.ops)
	out := map[string]float64{}
	if err != nil {
		return out
	}
	for s, v := range m.series(d.metric) {
		_, labels, _ := strings.Cut(s, "{")
		_, o, _ := strings.Cut(labels, `outcome="`)
		o, _, _ = strings.Cut(o, `"`)
		out[o] += v
	}
	return out
}

// bank adds the running life's counts to the ended lives' (call it right before a kill).
func (d *inDoubt) bank(ctx context.Context) {
	cur := d.outcomes(ctx)
	d.mu.Lock()
	defer d.mu.Unlock()
	for o, v := range cur {
		d.banked[o] += v
	}
}

// total returns the ended lives' counts plus the running life's, by outcome.
func (d *inDoubt) total(ctx context.Context) map[string]float64 {
	cur := d.outcomes(ctx)
	d.mu.Lock()
	defer d.mu.Unlock()
	for o, v := range d.banked {
		cur[o] += v
	}
	for o, v := range cur {
		if v == 0 {
			delete(cur, o)
		}
	}
	return cur
}
