package embeddedmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/testutil/metrictest"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

func TestMetricsReportFramesAndPartitions(t *testing.T) {
	reg := prometheus.NewRegistry()
	q, err := embeddedmq.New(embeddedmq.Config{Dir: t.TempDir(), Partitions: 2}, embeddedmq.Deps{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	for i := 0; i < 3; i++ {
		if _, err := q.Publish(t.Context(), mq.Record{Tenant: "t", Table: "m", Payload: []byte("row")}); err != nil {
			t.Fatal(err)
		}
	}
	// The consumer's pending count is updated by the server shortly after a publish returns, so
	// the scrape-time gauges are read until they settle (bounded).
	var got map[string]float64
	poll.Within(t, 5*time.Second, func() bool {
		got = gather(t, reg)
		return got["wavehouse_mq_connected"] == 1 && got["wavehouse_mq_partition_frames"] == 3 && got["wavehouse_mq_partition_lag_frames"] == 3
	})
	if got["wavehouse_mq_frame_records"] != 3 || got["wavehouse_mq_publish_duration_seconds"] != 3 {
		t.Fatalf("frame/publish observations %v, want 3 each", got)
	}
	if got["wavehouse_mq_connected"] != 1 || got["wavehouse_mq_partition_frames"] != 3 || got["wavehouse_mq_partition_lag_frames"] != 3 {
		t.Fatalf("scrape-time metrics %v, want connected 1, 3 frames retained and pending", got)
	}
	if got["wavehouse_mq_partition_oldest_unacked_seconds"] <= 0 {
		t.Fatalf("oldest unacked age %v, want > 0", got["wavehouse_mq_partition_oldest_unacked_seconds"])
	}
}

// gather sums every gauge value and histogram sample count of reg by metric name.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetHistogram() != nil:
				got[mf.GetName()] += float64(m.GetHistogram().GetSampleCount())
			case m.GetGauge() != nil:
				got[mf.GetName()] += m.GetGauge().GetValue()
			}
		}
	}
	return got
}

// TestMetricsReportTenantQueuedBytesAndBudget: each tenant with unacknowledged bytes reports them
// next to its budget (its own, or the boot default), and an acknowledged frame gives them back.
func TestMetricsReportTenantQueuedBytesAndBudget(t *testing.T) {
	reg := prometheus.NewRegistry()
	budget := func(tenant string) int64 {
		if tenant == "vip" {
			return 5000
		}
		return 0
	}
	q := openWith(t, embeddedmq.Config{Dir: t.TempDir(), Partitions: 1, TenantMaxBytes: 1000, TenantBudget: budget}, embeddedmq.Deps{Registerer: reg})
	for tenant, n := range map[string]int{"plain": 300, "vip": 200} {
		if _, err := q.Publish(t.Context(), mq.Record{Tenant: tenant, Table: "x", Payload: make([]byte, n)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []struct {
		name, tenant string
		want         float64
	}{
		{"wavehouse_mq_tenant_queued_bytes", "plain", 300}, {"wavehouse_mq_tenant_budget_bytes", "plain", 1000},
		{"wavehouse_mq_tenant_queued_bytes", "vip", 200}, {"wavehouse_mq_tenant_budget_bytes", "vip", 5000},
	} {
		if got := metrictest.Value(t, reg, w.name, map[string]string{"tenant": w.tenant}); got != w.want {
			t.Errorf("%s{tenant=%q} = %v, want %v", w.name, w.tenant, got, w.want)
		}
	}
	s, err := q.Subscribe(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var acked int
	for acked < 2 {
		ds, err := s.Fetch(t.Context(), 2, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if err := d.Ack(t.Context()); err != nil {
				t.Fatal(err)
			}
			acked++
		}
	}
	if got := gather(t, reg); got["wavehouse_mq_tenant_queued_bytes"] != 0 || got["wavehouse_mq_tenant_budget_bytes"] != 0 {
		t.Fatalf("after every frame is acknowledged: %v, want no tenant series", got)
	}
}
