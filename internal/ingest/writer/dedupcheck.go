package writer

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/wavehouse/wavehouse/internal/store"
)

// dedupRecheck is how long a table's deduplication status is trusted before it is asked again
// (a table may be altered to add a deduplication window).
const dedupRecheck = 5 * time.Minute

// dedupChecker remembers per table whether its inserts are deduplicated by token, warns once per
// table when they are not, and exports the status as a gauge.
type dedupChecker struct {
	rep     store.DedupReporter // nil: the store cannot tell
	metrics *Metrics
	now     func() time.Time

	mu     sync.Mutex
	tables map[tableKey]dedupStatus
}

type dedupStatus struct {
	dedup   bool
	warned  bool
	checked time.Time
}

// check returns whether inserts into k are deduplicated; false when unknown.
func (c *dedupChecker) check(ctx context.Context, k tableKey, target store.Target, log *slog.Logger) bool {
	if c.rep == nil {
		return false
	}
	now := c.now()
	c.mu.Lock()
	st, ok := c.tables[k]
	c.mu.Unlock()
	if ok && now.Sub(st.checked) < dedupRecheck {
		return st.dedup
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	dedup, err := c.rep.InsertDeduplicated(cctx, target, k.table)
	cancel()
	if err != nil {
		// Unknown (the table may not exist yet): ask again on the next flush.
		return ok && st.dedup
	}
	st.dedup, st.checked = dedup, now
	v := 0.0
	if dedup {
		v = 1
		st.warned = false
	} else if !st.warned {
		st.warned = true
		log.Warn("inserts into this table are not deduplicated: a crash between an insert and its acknowledgement can insert a batch twice; " +
			"create MergeTree tables with SETTINGS non_replicated_deduplication_window = 1000 (Replicated* tables deduplicate by default) on ClickHouse 22.2 or later")
	}
	c.metrics.tableDedup.WithLabelValues(k.tenant, k.table).Set(v)
	c.mu.Lock()
	c.tables[k] = st
	c.mu.Unlock()
	return dedup
}
