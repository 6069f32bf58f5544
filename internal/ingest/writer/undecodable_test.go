package writer

import (
	"bytes"
	"slices"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
)

// TestNothingIsSettledSilently: between valid frames, a message on the table's ingest subject
// that is no frame is dead-lettered with its raw bytes and counted, and an empty frame is
// acknowledged and counted; the valid rows around them are inserted.
func TestNothingIsSettledSilently(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, embeddedmq.Deps{Registerer: reg}, m)
	jq, err := e.q.Handle.Queue()
	if err != nil {
		t.Fatal(err)
	}
	raw := func(data []byte) uint64 {
		msg := nats.NewMsg(jq.Names().Subject("t", "events"))
		msg.Data = data
		ack, err := jq.JetStream().PublishMsg(t.Context(), msg)
		if err != nil {
			t.Fatalf("publish raw: %v", err)
		}
		return ack.Sequence
	}
	garbage := []byte("\x00\x01 not a frame")
	first := e.publish(t, `[1,"a"]`)
	bad := raw(garbage)
	raw([]byte{0xF1, 0x00}) // a frame of no record
	last := e.publish(t, `[2,"b"]`)
	e.run(t)
	e.waitSettled(t, first, last)
	if got := e.ids(t); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("inserted ids %v, want [1 2]", got)
	}
	entries, err := e.q.DLQ().List(t.Context(), "t", "events", 0, 10)
	if err != nil || len(entries) != 1 {
		t.Fatalf("dead letters %+v, %v; want the one undecodable message", entries, err)
	}
	if en := entries[0]; en.Reason.Code != mq.ReasonUndecodable || en.Raw == nil || !bytes.Equal(en.Raw.Data, garbage) || en.Raw.Seq != bad {
		t.Fatalf("dead letter %+v raw %+v, want code undecodable with the bytes of sequence %d", en, en.Raw, bad)
	}
	if n := counterSum(t, reg, "wavehouse_ingest_empty_frames_total"); n != 1 {
		t.Fatalf("empty frames counted %v, want 1", n)
	}
	if n := counterSum(t, reg, "wavehouse_mq_undecodable_total"); n != 1 {
		t.Fatalf("wavehouse_mq_undecodable_total = %v, want 1", n)
	}
}

// counterSum returns the sum of counter name over its labels.
func counterSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, mm := range mf.GetMetric() {
				sum += mm.GetCounter().GetValue()
			}
		}
	}
	return sum
}
