package embeddedmq_test

import (
	"context"
	"testing"
	"time"

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
	q, err := embeddedmq.New(cfg, embeddedmq.Deps{})
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
	q := open(t, cfg)
	return &mqtest.Harness{
		Queue: q,
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

func TestConformance(t *testing.T) {
	mqtest.Run(t, newHarness, mqtest.Caps{TenantBudget: true})
}
