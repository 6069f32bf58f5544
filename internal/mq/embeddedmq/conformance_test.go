package embeddedmq_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
	"github.com/wavehouse/wavehouse/internal/mq/mqtest"
)

func TestMain(m *testing.M) {
	if crashChild(m) {
		return
	}
	goleak.VerifyTestMain(m)
}

func open(t testing.TB, cfg embeddedmq.Config) *embeddedmq.Queue {
	t.Helper()
	return openWith(t, cfg, embeddedmq.Deps{})
}

func openWith(t testing.TB, cfg embeddedmq.Config, deps embeddedmq.Deps) *embeddedmq.Queue {
	t.Helper()
	q, err := embeddedmq.New(cfg, deps)
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	if err := q.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	return q
}

func newHarness(t *testing.T, o mqtest.Options) *mqtest.Harness {
	cfg := embeddedmq.Config{
		Dir:             t.TempDir(),
		Partitions:      o.Partitions,
		AckWait:         o.AckWait,
		DuplicateWindow: o.DuplicateWindow,
		MaxBytes:        o.MaxBytes,
		TenantMaxBytes:  o.TenantMaxBytes,
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = 2
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = 5 * time.Second
	}
	if cfg.TenantMaxBytes == 0 {
		cfg.TenantMaxBytes = -1
	}
	reg := prometheus.NewRegistry()
	q := openWith(t, cfg, embeddedmq.Deps{Registerer: reg})
	return &mqtest.Harness{
		Queue:    q,
		Gatherer: reg,
		PublishRaw: func(t testing.TB, p int, tail string, data []byte, hdr map[string]string) uint64 {
			return publishRaw(t, q.Handle.Queue, p, tail, data, hdr)
		},
		DeleteConsumer: func(t testing.TB, p int) {
			jq, err := q.Handle.Queue()
			if err != nil {
				t.Fatalf("queue: %v", err)
			}
			if err := jq.JetStream().DeleteConsumer(t.Context(), jq.Names().Stream(p), jsmq.ConsumerName); err != nil {
				t.Fatalf("delete consumer: %v", err)
			}
		},
	}
}

// publishRaw stores data as it is on partition p's ingest subject.
func publishRaw(t testing.TB, queue func() (*jsmq.Queue, error), p int, tail string, data []byte, hdr map[string]string) uint64 {
	t.Helper()
	jq, err := queue()
	if err != nil {
		t.Fatalf("queue: %v", err)
	}
	msg := nats.NewMsg(jq.Names().Prefix + ".in." + strconv.Itoa(p) + "." + tail)
	msg.Data = data
	for k, v := range hdr {
		msg.Header.Set(k, v)
	}
	ack, err := jq.JetStream().PublishMsg(t.Context(), msg)
	if err != nil {
		t.Fatalf("publish raw: %v", err)
	}
	return ack.Sequence
}

func TestConformance(t *testing.T) {
	mqtest.Run(t, newHarness, mqtest.Caps{TenantBudget: true})
}
