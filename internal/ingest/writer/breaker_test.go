package writer

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/store"
)

// outage fails the first n inserts transiently without inserting anything: the server is down.
type outage struct {
	store.Inserter
	left atomic.Int32
}

func (o *outage) Insert(ctx context.Context, b store.Batch) error {
	if o.left.Add(-1) >= 0 {
		return fmt.Errorf("%w: injected outage", store.ErrUnavailable)
	}
	return o.Inserter.Insert(ctx, b)
}

// faultyJournal is the real journal, except that the first call of one method fails as if
// the queue had a hiccup.
type faultyJournal struct {
	mq.Journal
	method string
	fired  atomic.Bool
}

func (j *faultyJournal) fault(method string) error {
	if method == j.method && j.fired.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: injected %s fault", mq.ErrUnavailable, method)
	}
	return nil
}

func (j *faultyJournal) Plan(ctx context.Context, p mq.BatchPlan) error {
	if err := j.fault("Plan"); err != nil {
		return err
	}
	return j.Journal.Plan(ctx, p)
}

func (j *faultyJournal) Lookup(ctx context.Context, tenant, table string, frames []mq.FrameRef, since time.Time) (map[mq.FrameRef]mq.BatchPlan, error) {
	if err := j.fault("Lookup"); err != nil {
		return nil, err
	}
	return j.Journal.Lookup(ctx, tenant, table, frames, since)
}

func (j *faultyJournal) Claim(ctx context.Context, p mq.BatchPlan, lease time.Duration) (mq.BatchPlan, bool, error) {
	if err := j.fault("Claim"); err != nil {
		return mq.BatchPlan{}, false, err
	}
	return j.Journal.Claim(ctx, p, lease)
}

func retriesValue(t *testing.T, m *Metrics, reason string) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.retries.WithLabelValues(reason).Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetCounter().GetValue()
}

// TestBreakerTrialReturningBeforeTheInsertDoesNotStickOpen: a transient insert failure opens
// the tenant's breaker; after the cool-down the first flush of the redelivered frame fails in
// the journal (lookup, or the claim of its in-doubt plan) and returns without inserting. Later
// flushes must still be let through and the row must land; a breaker that admitted that flush
// as its half-open trial and never heard back refuses the tenant until a restart.
func TestBreakerTrialReturningBeforeTheInsertDoesNotStickOpen(t *testing.T) {
	for _, method := range []string{"Lookup", "Claim"} {
		t.Run(method, func(t *testing.T) {
			e := newEnv(t)
			p := e.publish(t, `[1,"a"]`)
			m, err := NewMetrics(nil)
			if err != nil {
				t.Fatal(err)
			}
			cfg := testConfig()
			cfg.BreakerFailures, cfg.BreakerCooldown = 1, 200*time.Millisecond
			ins := &outage{Inserter: e.s}
			ins.left.Store(1)
			j := &faultyJournal{Journal: e.q, method: method}
			runWriterWith(t, cfg, Deps{Consumer: e.q, Store: ins, Journal: j, Targets: e, Metrics: m, Hooks: e.settledHook()})
			e.waitSettled(t, p)
			if got := e.ids(t); fmt.Sprint(got) != "[1]" {
				t.Fatalf("ids %v, want [1]", got)
			}
			if !j.fired.Load() {
				t.Fatalf("the %s fault never fired: the test did not exercise a pre-insert return", method)
			}
			if n := retriesValue(t, m, "breaker_open"); n == 0 {
				t.Fatal("no flush was refused by the breaker: it never opened")
			}
		})
	}
}
