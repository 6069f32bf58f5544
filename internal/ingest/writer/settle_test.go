package writer

import (
	"context"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// closingInserter inserts through the real store, then closes the queue, so
// that the acknowledgement that follows the insert fails.
type closingInserter struct {
	store.Inserter
	close func()
}

func (c closingInserter) Insert(ctx context.Context, b store.Batch) error {
	err := c.Inserter.Insert(ctx, b)
	c.close()
	return err
}

// TestFailedAckIsCounted checks that an ack that fails after a successful
// insert is visible in /metrics: such a frame is redelivered only after the
// ack wait, and without the counter the stall shows no error anywhere.
func TestFailedAckIsCounted(t *testing.T) {
	e := newEnv(t)
	e.publish(t, `[1,"a"]`)
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	ins := closingInserter{Inserter: e.s, close: func() { once.Do(func() { _ = e.q.Close(context.Background()) }) }}
	cfg := DefaultConfig()
	cfg.MaxWait = 20 * time.Millisecond
	cfg.FetchWait = 20 * time.Millisecond
	w, err := New(cfg, Deps{Consumer: e.q, Store: ins, Targets: e, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = w.Run(ctx); close(stopped) }()
	defer func() { cancel(); <-stopped }()

	poll.Until(t, 10*time.Second, `a failed ack counted in wavehouse_ingest_settle_failures_total{op="ack"}`,
		func() bool { return counterValue(t, m, "ack") > 0 })
	if got := e.ids(t); len(got) != 1 || got[0] != 1 {
		t.Fatalf("rows %v, want [1]: the insert before the failed ack must have happened", got)
	}
}

func counterValue(t *testing.T, m *Metrics, op string) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.settleFailures.WithLabelValues(op).Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetCounter().GetValue()
}
