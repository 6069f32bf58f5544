package embeddedmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
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
