package natsmq_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
	"github.com/wavehouse/wavehouse/internal/mq/mqtest"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func open(t testing.TB, cfg natsmq.Config) *natsmq.Queue {
	t.Helper()
	return openWith(t, cfg, natsmq.Deps{})
}

func openWith(t testing.TB, cfg natsmq.Config, deps natsmq.Deps) *natsmq.Queue {
	t.Helper()
	q, err := natsmq.New(cfg, deps)
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	if err := q.Start(t.Context()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	return q
}

func newHarness(t *testing.T, o mqtest.Options) *mqtest.Harness {
	var (
		url string
		brk func(testing.TB)
	)
	if o.NeedBreak {
		p := testsvc.StartNATS(t)
		url = p.URL
		brk = func(t testing.TB) { p.Kill(t) }
	} else {
		url = testsvc.NATSServer(t).URL
	}
	cfg := natsmq.Config{
		URLs:            []string{url},
		ManageTopology:  true,
		Prefix:          testsvc.UniqueName(t, "mq"),
		Replicas:        1,
		Partitions:      o.Partitions,
		AckWait:         o.AckWait,
		DuplicateWindow: o.DuplicateWindow,
		MaxBytes:        o.MaxBytes,
		PublishTimeout:  2 * time.Second,
		ReconnectWait:   100 * time.Millisecond,
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = 2
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = 5 * time.Second
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 64 << 20
	}
	reg := prometheus.NewRegistry()
	q := openWith(t, cfg, natsmq.Deps{Registerer: reg})
	t.Cleanup(func() { deleteTopology(url, cfg.Topology().Names()) })
	return &mqtest.Harness{
		Queue:    q,
		Break:    brk,
		Gatherer: reg,
		PublishRaw: func(t testing.TB, p int, tail string, data []byte, hdr map[string]string) uint64 {
			return publishRaw(t, url, cfg.Prefix, p, tail, data, hdr)
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

// publishRaw stores data as it is on partition p's ingest subject, over a
// connection of its own (as a foreign publisher would).
func publishRaw(t testing.TB, url, prefix string, p int, tail string, data []byte, hdr map[string]string) uint64 {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	msg := nats.NewMsg(prefix + ".in." + strconv.Itoa(p) + "." + tail)
	msg.Data = data
	for k, v := range hdr {
		msg.Header.Set(k, v)
	}
	ack, err := js.PublishMsg(t.Context(), msg)
	if err != nil {
		t.Fatalf("publish raw: %v", err)
	}
	return ack.Sequence
}

// deleteTopology removes a harness's streams and bucket from a shared
// server over a connection of its own (the queue may be closed already).
// It is best effort: a private server is gone anyway.
func deleteTopology(url string, n jsmq.Names) {
	nc, err := nats.Connect(url, nats.MaxReconnects(0))
	if err != nil {
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for p := 0; p < n.Partitions; p++ {
		_ = js.DeleteStream(ctx, n.Stream(p))
	}
	_ = js.DeleteStream(ctx, n.DLQStream())
	_ = js.DeleteKeyValue(ctx, n.LeaseBucket())
	_ = js.DeleteKeyValue(ctx, n.JournalBucket())
	_ = js.DeleteKeyValue(ctx, n.SchemaBucket())
}

func TestConformance(t *testing.T) {
	mqtest.Run(t, newHarness, mqtest.Caps{})
}
